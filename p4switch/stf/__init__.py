"""STF packet tests (p4c's format for its bmv2 back end) run on the embedded target.

``script.py`` reads an STF file into commands, ``runner.py`` runs them on a pipeline of
the language core (on the general ``ingress``/``egress`` path or the fused driver) and
compares the frames that came out with those expected.
"""

from p4switch.stf.runner import StfResult, run_stf
from p4switch.stf.script import StfError, read_stf

__all__ = ["StfError", "StfResult", "read_stf", "run_stf"]
