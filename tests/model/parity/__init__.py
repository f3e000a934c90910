"""The model parity reference, in modules (parity_reference.py runs it):

    cases.py      the configurations tested, one axis value at a time
    weights.py    random weights, projections (stored or drawn from the
                  seed) and the export to a model folder
    encoder.py    the forward pass from docs/models.md's formulas
    attention.py  every kernel, with the C++'s stabilisers
    self_check.py the reference against PyTorch's own modules and against
                  the formulas' known properties
"""
