// The HTML report's only script (htmlreport.c): clicking a heading of a table.sortable sorts
// its rows by that column, numbers by value (empty cells last), the rest as text. The page's
// Content-Security-Policy allows this script by its SHA-256 alone, so edit it freely: the hash
// is computed from this file at build time.
document.querySelectorAll('table.sortable th').forEach(function(th, col) {
  th.addEventListener('click', function() {
    var body = th.closest('table').tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var num = th.getAttribute('data-type') === 'num';
    var dir = th.getAttribute('data-dir') === 'asc' ? -1 : 1;
    th.setAttribute('data-dir', dir === 1 ? 'asc' : 'desc');
    rows.sort(function(a, b) {
      var x = a.cells[col].textContent, y = b.cells[col].textContent;
      if (num) {
        x = x === '' ? Infinity : parseFloat(x);
        y = y === '' ? Infinity : parseFloat(y);
        return dir * (x < y ? -1 : x > y ? 1 : 0);
      }
      return dir * x.localeCompare(y);
    });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});
