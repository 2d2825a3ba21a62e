#!/usr/bin/env python3
"""Finds MAD header bytes indexed by literal offset outside `mad-wire`.

The common MAD header (bytes 0-23: base version, class, class version,
method, status, class-specific word, TID, attribute ID, attribute
modifier) is read and written through `mad-wire`'s typed views (`Mad<T>`,
`MadHeader`, `Smp<T>`, `SaMad<T>`, `RmppView`, ...), never as `mad[1]`,
`mad[3] |= 0x80`, `mad[8..16]` or `copy_from_slice(&[1, class, 1, method])`
(issue 28, item 2). This script keeps it so.

What it scans: production code, i.e. `src/` and `examples/` of every
workspace crate and of the facade crate (`src/bin/...`), outside `#[cfg(test)]` modules
(inline `mod x { ... }` or a file `mod x;`) and outside comments (doc examples are doctests). Test files (`tests/`, `benches/`,
`fuzz/`) are not scanned: they are a separate bullet of the issue (bytes
are sometimes the point of a test). `mad-wire/` is where offsets live.

What it flags, on a buffer whose name says it holds a MAD (`mad`, `m`,
`smp`, `rep`, `reply`, `resp`, `head`, `bytes`, `hdr`, `msg`, `message`,
`umad`, `r`, `h`, `x.bytes()`, ...; see `NAMES`; a buffer of attribute
data is called something else, e.g. `req` or `data`):
  - `NAME[N]` with N a literal below 24 (a header byte),
  - `NAME[A..B]`, `NAME[..B]`, `NAME[A..]` with A or B a literal below 24
    other than the whole header `[..24]` / payload `[24..]`,
  - `NAME.get(A..B)`, `NAME.get(N)`, `NAME.get_mut(N)` with A or N below 24,
  - `copy_from_slice(&[1, ...` (a header written as a byte list).

Exceptions go in `scripts/mad-offsets-allow.txt`, one `path: reason` per
line (`path` relative to the repository root); only the two transports
that frame bytes (umad's `ib_user_mad`, ibsim's `sim_request`) belong
there, each behind a named view.

Test code is counted, not forbidden: tests compare `Repr`s and typed
fields (`mad_testkit_wire::header::of`, `MadBuilder`), unless the bytes
are the point (a framing, a capture, a hostile byte a view cannot write).
A test file is any `.rs` file under a `tests/`, `benches/` or `fuzz/`
folder, a test module file (`tests.rs`, `*_tests.rs`, a `#[cfg(test)] mod
x;`), and a production file's inline `#[cfg(test)]` module (counted under
that file's path), outside `mad-wire/` and `mad-testkit-wire/` (where
offsets live). A test file that pokes header bytes the same way as above
must say why in a comment holding `bytes are the point:`, and at most
`TEST_FILE_LIMIT` such files may exist.

Prints each offending production line as `path:line: text`, and each test
file that pokes header bytes without saying why, and exits 1 when there is
any or when the test files that poke are more than the limit.
`--tests` lists every test file that pokes header bytes, with its count
of lines.

    scripts/check-mad-offsets.py [--tests]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["mad-core", "mad-rmpp", "mad-agents", "mad-sm", "mad-sim", "mad-cm",
          "mad-testkit", "tools", "."]
SCANNED = ("src", "examples")
ALLOW = os.path.join(ROOT, "scripts", "mad-offsets-allow.txt")
# At most this many test files may poke MAD header bytes (each saying why).
TEST_FILE_LIMIT = 9
WHY = "bytes are the point:"
# Where offsets live: not counted.
TEST_SKIP = ("mad-wire", "mad-testkit-wire", "target", ".git", "python")
NAMES = (r"(?:(?:mad|m|smp|rep|reply|resp|response|head|header|hdr|msg|"
         r"message|umad|bytes|raw|r|h|frame|first)|[a-z_]+\.bytes\(\))")
LIT = r"(?:0x[0-9a-fA-F]+|[0-9]+)"
INDEX = re.compile(r"(?<![A-Za-z0-9_])" + NAMES + r"\[(" + LIT + r")\]")
RANGE = re.compile(r"(?<![A-Za-z0-9_])" + NAMES + r"\[(" + LIT + r")?\.\.=?(" + LIT + r")?\]")
GET = re.compile(r"(?<![A-Za-z0-9_])" + NAMES + r"\s*\.get(?:_mut)?\((" + LIT + r")(?:\.\.|\))")
LIST = re.compile(r"copy_from_slice\(&\[\s*1\s*,")


def num(s):
    return int(s, 0) if s is not None else None


def offending(line):
    for mt in INDEX.finditer(line):
        if num(mt.group(1)) < 24:
            return True
    for mt in RANGE.finditer(line):
        a, b = num(mt.group(1)), num(mt.group(2))
        if (a, b) in ((None, 24), (24, None), (0, 24), (None, None)):
            continue  # the whole header, the whole payload, everything
        if (a is not None and a < 24) or (b is not None and b <= 24):
            return True
    for mt in GET.finditer(line):
        if num(mt.group(1)) < 24:
            return True
    return bool(LIST.search(line))


TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*([;{])")


def without_tests(src):
    """`src` with each inline `#[cfg(test)] mod x { ... }` blanked (newlines
    kept, so line numbers stay), and the names of `#[cfg(test)] mod x;`."""
    out, files, pos = [], [], 0
    for mt in TEST_MOD.finditer(src):
        if mt.start() < pos:
            continue
        if mt.group(2) == ";":
            files.append(mt.group(1))
            continue
        depth, i = 0, mt.end() - 1
        while i < len(src):
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            if depth == 0:
                break
            i += 1
        out.append(src[pos:mt.start()])
        out.append(re.sub(r"[^\n]", "", src[mt.start():i + 1]))
        pos = i + 1
    out.append(src[pos:])
    return "".join(out), files


def production_files():
    """(path, source without its test modules) of each production file."""
    skip = set()
    for crate in CRATES:
        for sub in SCANNED:
            top = os.path.join(ROOT, crate, sub)
            for dirpath, dirs, files in os.walk(top):
                dirs.sort()
                dirs[:] = [d for d in dirs if d != "tests"]
                for f in sorted(files):
                    path = os.path.join(dirpath, f)
                    if not f.endswith(".rs") or f == "tests.rs" or f.endswith("_tests.rs"):
                        continue
                    if any(path == x or path.startswith(x + os.sep) for x in skip):
                        continue
                    with open(path, encoding="utf-8") as fh:
                        src, test_mods = without_tests(fh.read())
                    base = dirpath if f in ("mod.rs", "lib.rs", "main.rs") else path[:-3]
                    for name in test_mods:
                        skip.add(os.path.join(base, name + ".rs"))
                        skip.add(os.path.join(base, name))
                    yield path, src


def allowed():
    out = {}
    with open(ALLOW, encoding="utf-8") as fh:
        for raw in fh:
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            path, _, reason = raw.partition(":")
            if not reason.strip():
                sys.exit(f"{ALLOW}: entry `{raw}` gives no reason")
            out[path.strip()] = reason.strip()
    return out


def offending_lines(src):
    """Indexes (0-based) of the lines of `src` that poke header bytes."""
    lines = src.split("\n")
    code = [re.sub(r"//.*", "", line) for line in lines]
    out = []
    for n, line in enumerate(code):
        # A call chain split over lines (`mad\n    .get(4..6)`) is read
        # joined to the line before.
        joined = line if n == 0 else code[n - 1].rstrip() + line.strip()
        if offending(line) or (line.lstrip().startswith(".") and offending(joined) and not offending(code[n - 1])):
            out.append(n)
    return out


def test_files():
    """(relative path, lines poking header bytes, says why) of each test
    file that pokes header bytes."""
    out = {}
    prod = {}
    for path, src in production_files():
        prod[path] = src
    for dirpath, dirs, files in os.walk(ROOT):
        rel_dir = os.path.relpath(dirpath, ROOT)
        if rel_dir == ".":
            dirs[:] = [d for d in dirs if d not in TEST_SKIP]
        dirs[:] = sorted(d for d in dirs if d not in ("target", ".git"))
        parts = rel_dir.split(os.sep)
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as fh:
                full = fh.read()
            if path in prod:
                # Only the inline test modules of a production file.
                kept = prod[path].split("\n")
                lines = full.split("\n")
                src = "\n".join(a if a != b else "" for a, b in zip(lines, kept))
            elif (set(parts) & {"tests", "benches", "fuzz"} or f == "tests.rs"
                  or f.endswith("_tests.rs") or "src" in parts):
                src = full  # a test file, or a `#[cfg(test)] mod x;` file
            else:
                continue
            hits = offending_lines(src)
            if hits:
                out[os.path.relpath(path, ROOT)] = (hits, WHY in full)
    return out


def main():
    allow = allowed()
    bad = []
    for path, src in production_files():
        rel = os.path.relpath(path, ROOT)
        if rel in allow:
            continue
        lines = src.split("\n")
        for n in offending_lines(src):
            bad.append(f"{rel}:{n + 1}: {lines[n].strip()}")
    for b in bad:
        print(b)
    failed = False
    if bad:
        print(f"{len(bad)} MAD header byte(s) indexed by offset outside mad-wire; "
              "use mad-wire's views (Mad, Smp, SaMad, RmppView, ...)", file=sys.stderr)
        failed = True
    tests = test_files()
    if "--tests" in sys.argv[1:]:
        for rel, (hits, why) in sorted(tests.items()):
            print(f"{len(hits):3} {'why' if why else '   '} {rel}")
    for rel, (hits, why) in sorted(tests.items()):
        if not why:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
                lines = fh.read().split("\n")
            for n in hits:
                print(f"{rel}:{n + 1}: {lines[n].strip()}")
            print(f"{rel}: a test file pokes MAD header bytes without a comment "
                  f"`{WHY} ...`; compare Reprs (mad_testkit_wire::header::of) "
                  "or say why the bytes are the point", file=sys.stderr)
            failed = True
    if len(tests) > TEST_FILE_LIMIT:
        print(f"{len(tests)} test files poke MAD header bytes; at most "
              f"{TEST_FILE_LIMIT} may (scripts/check-mad-offsets.py --tests lists them)",
              file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
