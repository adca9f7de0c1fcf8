"""The things fusebench measures: one module per block, each registering its variants."""
