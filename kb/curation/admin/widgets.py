"""Form fields for the record's ordered lists, without JavaScript.

``solutions`` and ``preventionTips`` are ordered lists of strings: a textarea with one
item per line keeps their order visible and editable (reorder by moving lines), works
without JS and so under the strict CSP. Tags are short words: one text input, separated
by commas or newlines.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError


def _newlines(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\r", "\n")


class TextField(forms.CharField):
    """Multi-line text kept as typed: browsers send CRLF line breaks, the dataset has LF,
    and code fields may end in whitespace that matters. Without this, saving a form
    nobody typed in would "change" every multi-line field."""

    widget = forms.Textarea

    def __init__(self, **kwargs: Any) -> None:
        kwargs["strip"] = False
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        value = super().to_python(value)
        return _newlines(value) if isinstance(value, str) else value

    def has_changed(self, initial: Any, data: Any) -> bool:
        return (initial or "") != (self.to_python(data) or "")


class LinesField(forms.Field):
    """An ordered list of strings edited as one item per line; blank lines are dropped."""

    widget: type[forms.Widget] = forms.Textarea  # a subclass may pick another widget class
    joiner = "\n"  # how the list is shown for editing; ``split`` reads it back

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.widget.attrs.setdefault("rows", 6)
        self.widget.attrs.setdefault("class", "kb-lines vLargeTextField")

    def split(self, text: str) -> list[str]:
        lines = _newlines(text).split("\n")
        return [line.strip() for line in lines if line.strip()]

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return self.joiner.join(str(item) for item in value)
        return value

    def to_python(self, value: Any) -> list[str]:
        if value in (None, ""):
            return []
        if isinstance(value, list | tuple):
            return [str(v) for v in value]
        return self.split(str(value))

    def has_changed(self, initial: Any, data: Any) -> bool:
        return list(initial or []) != self.to_python(data)


TAG_SPLIT = re.compile(r"[,\n]+")
TAG_OK = re.compile(r"^[^/\s?#%\\]{1,100}$")


class TagsField(LinesField):
    """Tags, separated by commas or newlines; order kept, duplicates dropped."""

    widget = forms.TextInput
    joiner = ", "

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.widget.attrs.pop("rows", None)
        self.widget.attrs["class"] = "kb-tags vTextField"

    def split(self, text: str) -> list[str]:
        out: list[str] = []
        for part in TAG_SPLIT.split(text):
            tag = part.strip()
            if tag and tag not in out:
                out.append(tag)
        return out

    def validate(self, value: Any) -> None:
        super().validate(value)
        bad = [t for t in value if not TAG_OK.match(t)]
        if bad:
            raise ValidationError(
                "Tags are single words of at most 100 characters, without spaces or "
                "/ ? # %% \\ : %(bad)s",
                params={"bad": ", ".join(bad[:5])},
                code="bad_tag",
            )
