"""What every room shares and nothing else: the error types, the command line's one error
shape, and how text and numbers are written."""
