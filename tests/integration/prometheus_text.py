"""A strict reader of the Prometheus text exposition format (version 0.0.4), written from the
format's documentation, for tests that scrape /metrics: every line is a comment (# HELP,
# TYPE), a sample, or empty; names and label names follow the format's grammar; label values
use only the three escapes; each family is declared once, before its samples, and its samples
are contiguous; histograms have ascending le bounds ending in +Inf, cumulative counts, and a
_count equal to the +Inf bucket. parse() raises FormatError naming the line on any breach."""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
# a sample value: a decimal float, or one of the three spellings the format gives NaN and the
# infinities (Python's float() would also take "nan", "infinity" and "1_0")
FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


class FormatError(Exception):
    pass


def parse_value(text, where):
    if text == "+Inf":
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if FLOAT.match(text) is None:
        raise FormatError(f"{where}: value {text!r} is not a float")
    return float(text)


def parse_labels(text, where):
    """text starts after '{'; returns (labels dict, rest after '}')."""
    labels, i = {}, 0
    while True:
        if text[i:i + 1] == "}":
            return labels, text[i + 1:]
        m = re.match(r"([^=\s]+)=\"", text[i:])
        if m is None:
            raise FormatError(f"{where}: bad label at {text[i:]!r}")
        name = m.group(1)
        if not LABEL_NAME.match(name) or name.startswith("__"):
            raise FormatError(f"{where}: bad label name {name!r}")
        if name in labels:
            raise FormatError(f"{where}: label {name!r} twice")
        i += m.end()
        value = []
        while True:
            if i >= len(text):
                raise FormatError(f"{where}: unterminated label value")
            c = text[i]
            if c == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise FormatError(f"{where}: bad escape \\{nxt} in a label value")
                value.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise FormatError(f"{where}: newline in a label value")
            else:
                value.append(c)
                i += 1
        labels[name] = "".join(value)
        if text[i:i + 1] == ",":
            i += 1
        elif text[i:i + 1] != "}":
            raise FormatError(f"{where}: expected ',' or '}}' after label {name}")


def family_of(sample_name, types):
    if sample_name in types:
        return sample_name
    for suffix in ("_bucket", "_sum", "_count"):
        base = sample_name[:-len(suffix)]
        if sample_name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return None


def parse(text):
    """Returns {family: {"type", "help", "samples": [(name, labels, value)]}}."""
    if text and not text.endswith("\n"):
        raise FormatError("the exposition does not end with a newline")
    families, types, current, closed = {}, {}, None, set()
    for number, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        where = f"line {number}"
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.match(name):
                    raise FormatError(f"{where}: bad metric name {name!r}")
                fam = families.setdefault(name, {"type": "untyped", "help": None,
                                                 "samples": []})
                if fam["samples"]:
                    raise FormatError(f"{where}: {parts[1]} of {name} after its samples")
                if parts[1] == "TYPE":
                    if name in types:
                        raise FormatError(f"{where}: a second TYPE for {name}")
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise FormatError(f"{where}: bad TYPE line {line!r}")
                    types[name] = fam["type"] = parts[3]
                else:
                    if fam["help"] is not None:
                        raise FormatError(f"{where}: a second HELP for {name}")
                    fam["help"] = parts[3] if len(parts) == 4 else ""
                if current != name and current is not None:
                    closed.add(current)
                current = name
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{|\s)", line)
        if m is None:
            raise FormatError(f"{where}: not a sample: {line!r}")
        name, rest = m.group(1), line[m.end(1):]
        labels = {}
        if rest.startswith("{"):
            labels, rest = parse_labels(rest[1:], where)
        fields = rest.split()
        if len(fields) not in (1, 2) or not rest.startswith(" "):
            raise FormatError(f"{where}: expected ' value [timestamp]' in {line!r}")
        value = parse_value(fields[0], where)
        family = family_of(name, types) or name
        if family in closed:
            raise FormatError(f"{where}: samples of {family} are not contiguous")
        if current is not None and current != family:
            closed.add(current)
        current = family
        fam = families.setdefault(family, {"type": "untyped", "help": None, "samples": []})
        fam["samples"].append((name, labels, value))
    for name, fam in families.items():
        seen = set()
        for sample_name, labels, _ in fam["samples"]:
            key = (sample_name, tuple(sorted(labels.items())))
            if key in seen:
                raise FormatError(f"{name}: the series {key} twice")
            seen.add(key)
        if fam["type"] == "histogram":
            check_histogram(name, fam["samples"])
    return families


def check_histogram(name, samples):
    series = {}
    for sample_name, labels, value in samples:
        base = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        s = series.setdefault(base, {"buckets": [], "sum": None, "count": None})
        if sample_name == name + "_bucket":
            if "le" not in labels:
                raise FormatError(f"{name}: a bucket without le")
            s["buckets"].append((parse_value(labels["le"], name), value))
        elif sample_name == name + "_sum":
            s["sum"] = value
        elif sample_name == name + "_count":
            s["count"] = value
        else:
            raise FormatError(f"{name}: sample {sample_name} in a histogram")
    for base, s in series.items():
        bounds = [b for b, _ in s["buckets"]]
        if not bounds or bounds[-1] != math.inf:
            raise FormatError(f"{name}{dict(base)}: no +Inf bucket")
        if bounds != sorted(bounds) or len(set(bounds)) != len(bounds):
            raise FormatError(f"{name}{dict(base)}: le bounds not ascending")
        counts = [c for _, c in s["buckets"]]
        if counts != sorted(counts):
            raise FormatError(f"{name}{dict(base)}: bucket counts not cumulative")
        if s["count"] is None or s["sum"] is None:
            raise FormatError(f"{name}{dict(base)}: _sum or _count missing")
        if s["count"] != counts[-1]:
            raise FormatError(f"{name}{dict(base)}: _count {s['count']} != +Inf {counts[-1]}")


def value(families, name, **labels):
    """The value of the one sample of name whose labels include labels; None when absent."""
    family = family_of(name, {k: v["type"] for k, v in families.items()}) or name
    found = [v for n, l, v in families.get(family, {"samples": []})["samples"]
             if n == name and all(l.get(k) == str(want) for k, want in labels.items())]
    if len(found) > 1:
        raise FormatError(f"{name}{labels}: {len(found)} samples match")
    return found[0] if found else None


def self_test():
    """The reader refuses what it must refuse (run by the tests that use it)."""
    good = ("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\"} 3\n"
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\n"
            "h_count 2\n")
    fams = parse(good)
    assert value(fams, "a_total", x="q\"\\\n") == 3
    assert value(fams, "h_count") == 2
    bad = [good[:-1],                                            # no final newline
           good.replace("h_count 2", "h_count 3"),               # count != +Inf
           good.replace('le="1"} 1', 'le="1"} 5'),               # not cumulative
           good.replace("a_total{x", "a_total{1x"),              # bad label name
           good.replace("\\\\\\n", "\\t"),                       # bad escape
           good + "a_total 4\n",                                 # not contiguous
           good.replace("counter", "countr"),                    # bad type
           good.replace('h_bucket{le="+Inf"} 2\n', ""),          # no +Inf
           good + "# TYPE a_total counter\n",                   # second TYPE
           good.replace("} 3\n", "} nan\n"),                     # Python's spellings of
           good.replace("} 3\n", "} infinity\n"),                # values, not the format's
           good.replace("} 3\n", "} 1_0\n"),
           good.replace("h_sum 3.5", "h_sum 3.5.1")]
    for text in bad:
        try:
            parse(text)
        except FormatError:
            continue
        raise AssertionError(f"the reader accepted {text!r}")
