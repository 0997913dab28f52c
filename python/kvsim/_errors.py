"""The exception every kvsim function raises for bad input or a failed run."""


class Error(Exception):
    """A kvsim error. ``str(e)`` is the message the CLI prints after ``kvsim: error:``
    (it names the file, line and key of bad input); ``e.code`` is its kind, such as
    ``"invalid_input"`` or ``"out_dir_taken"``."""

    def __init__(self, message, code=""):
        super().__init__(message)
        self.code = code
