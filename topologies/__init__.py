"""The pure network model: fat trees, tori, twin switches and their physical graph of cards and ports.

No Mininet, no P4 here: see ``topologies.model`` for the graph every part shares.
"""
