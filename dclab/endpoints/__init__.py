"""Transport stacks behind one interface (base.Stack). Adding a stack means adding one
module here and one line to STACKS."""
