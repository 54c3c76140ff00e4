"""The add-on's one exception for problems the user can fix."""


class BakeError(Exception):
    """A problem the user can fix; the message is shown in the status bar as it is. Raised
    before anything is written, or after the previous bake has been put back."""
