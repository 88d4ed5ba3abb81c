"""The pure network model: fat trees, tori, twin switches and their physical graph of cards and ports.

No Mininet, no P4 here: see ``topologies.model`` for the graph every part shares.
Generators: ``fattree`` (k-ary n-trees, twin fat trees), ``torus`` (mD tori, nDT
tori); port configurations: ``scp`` (fat-tree twins), ``portconfig`` (nDT);
``build`` turns a family and parameters (or parsed CLI arguments) into a
Topology; ``describe`` and ``draw`` show one; ``cli`` is ``twinnet topo``.
Numbering and port tables: docs/topologies.md.
"""
