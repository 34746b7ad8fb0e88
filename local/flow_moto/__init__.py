"""The parts of moto-launcher.py (the local stack's moto), one concept per module; see its docstring."""
