"""The differential fuzzer (issue #13, section 4): random programs over the op
table, CPU as the oracle. `tests/test_fuzz.py` runs a seeded slice in
`make test`; `make fuzz N=5000` runs long and prints mismatches per mode."""
