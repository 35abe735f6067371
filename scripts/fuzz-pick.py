#!/usr/bin/env python3
"""Cut fuzz/corpus/TARGET down to the N inputs that cover the most edges.

    scripts/fuzz-pick.py TARGET N      (after FUZZ_CMIN=1 scripts/fuzz.sh ...)

For targets whose minimised corpus is too big to commit whole (jwt_claims,
http_api: about 500 files each; see docs/FUZZING.md). Runs the built fuzz
binary (fuzz/target/<host>/release/TARGET, from `cargo fuzz build -s none`)
in libFuzzer's merge mode over the corpus to learn which edges each input
covers (the merge control file's COV lines, -use_counters=0), then keeps a
greedy set cover: repeatedly the input adding the most edges not covered
yet (the smaller on a tie), until N inputs or nothing more is added.
Deletes the other files and prints the edges kept.
"""
import os
import subprocess
import sys
import tempfile

target, limit = sys.argv[1], int(sys.argv[2])
fuzz = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz")
host = subprocess.run(["rustc", "+nightly", "-vV"], capture_output=True, text=True, check=True).stdout
host = next(line.split()[1] for line in host.splitlines() if line.startswith("host:"))
binary = os.path.join(fuzz, "target", host, "release", target)
corpus = os.path.join(fuzz, "corpus", target)

with tempfile.TemporaryDirectory() as scratch:
    # The merge writes the inputs it keeps into its first directory: an
    # empty scratch one, so the corpus itself is only read.
    out, control = os.path.join(scratch, "out"), os.path.join(scratch, "control")
    os.mkdir(out)
    subprocess.run([binary, "-merge=1", "-use_counters=0", f"-merge_control_file={control}", out, corpus],
                   capture_output=True, check=True)
    lines = open(control).read().split("\n")

# Control file: the number of files, the number in the first directory,
# the paths, then per input "STARTED i size", "FT i ..." and "COV i edges...".
count = int(lines[0])
files = lines[2:2 + count]
edges = {}
for line in lines[2 + count:]:
    fields = line.split()
    if fields and fields[0] == "COV":
        edges[int(fields[1])] = set(map(int, fields[2:]))
every = set().union(*edges.values())

chosen, covered = [], set()
while len(chosen) < limit:
    best = max(edges, key=lambda i: (len(edges[i] - covered), -os.path.getsize(files[i])))
    if not edges[best] - covered:
        break
    chosen.append(best)
    covered |= edges[best]

keep = {files[i] for i in chosen}
for path in files:
    if path.startswith(corpus) and path not in keep:
        os.remove(path)
print(f"{target}: {len(chosen)} inputs kept, covering {len(covered)} of {len(every)} edges")
