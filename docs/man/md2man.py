#!/usr/bin/env python3
"""Turn a docs/sdk/ reference page (Markdown in the curl style: # name, ## SECTION, fenced
code) into a man page of section 3, for `meson install`. Only what the pages use is handled:
headings, paragraphs, fenced code, lists, tables (as preformatted text), `code` and links.

  md2man.py PAGE.md OUT.3 VERSION
"""
import os
import re
import sys


def escape(text):
    text = text.replace('\\', '\\e')
    return text


def inline(text):
    text = re.sub(r'\[([^\]]+)\]\(([^)]+)\)', r'\1', text)  # links: their text
    text = re.sub(r'`([^`]+)`', r'\\fB\1\\fR', escape(text).replace('\\e', '\\e'))
    text = re.sub(r'\*\*([^*]+)\*\*', r'\\fB\1\\fR', text)
    if text.startswith(('.', "'")):
        text = '\\&' + text
    return text


def convert(md, name, version):
    out = ['.TH %s 3 "" "kcycle %s" "kcycle SDK"' % (name.upper(), version)]
    lines = md.split('\n')
    code = False
    for line in lines:
        if line.startswith('```'):
            out.append('.fi\n.RE' if code else '.RS 4\n.nf')
            code = not code
            continue
        if code:
            out.append(('\\&' if line.startswith(('.', "'")) else '') + escape(line))
            continue
        if line.startswith('# '):
            continue
        if line.startswith('## '):
            out.append('.SH ' + line[3:].strip())
        elif line.startswith('|'):
            if re.match(r'^\|[-| ]+\|$', line):
                continue
            cells = [inline(c.strip()) for c in line.strip().strip('|').split('|')]
            out.append('.br\n' + '  '.join(c for c in cells if c))
        elif line.startswith(('- ', '* ')):
            out.append('.IP \\(bu 2\n' + inline(line[2:]))
        elif line.strip() == '':
            out.append('.PP')
        else:
            out.append(inline(line))
    return '\n'.join(out) + '\n'


def main():
    page, target, version = sys.argv[1:4]
    name = os.path.basename(page)[:-3]
    with open(page) as f:
        text = convert(f.read(), name, version)
    with open(target, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
