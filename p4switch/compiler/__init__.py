"""The P4_16 front end and code generator: preprocess, parse, type, generate Python, fuse, derive P4Info."""
