"""Forms of the curation admin: the record form, the bulk tag form and the upload form.

The record form adds what curation needs beyond the model's fields: list editors, an
"accept collisions" box (read by ``kb.records.validation`` through the instance), and per
conflict a choice between the import's value and the curator's own. The form only
collects those choices (``take_incoming``, ``keep_mine``); ``kb.records.services`` applies them.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from kb.browse.releases import record_releases
from kb.curation.admin.widgets import LinesField, TagsField
from kb.records.models import ErrorRecord
from kb.records.schema import BY_KEY, FieldError, incoming_value

NULLABLE_TEXT = {f.name for f in ErrorRecord._meta.fields if f.null}


def wording_choices(record: ErrorRecord) -> list[tuple[str, str]]:
    """What a curator may retire on ``record``: the patterns of its older wordings (its
    aliases), each labelled with the releases that word it so, and any pattern retired
    before that is no longer among them (so that it can be un-retired). Empty: the record
    has nothing to retire, and its form has no such field."""
    releases = record_releases(record)
    choices: list[tuple[str, str]] = []
    for wording in releases.wordings if releases else ():
        if wording.current or not wording.pattern or wording.pattern in dict(choices):
            continue
        choices.append((wording.pattern, f"releases {wording.span or '?'}: {wording.message}"))
    known = dict(choices)
    for pattern in record.retired_wordings or []:
        if isinstance(pattern, str) and pattern not in known:
            choices.append((pattern, f"{pattern} (no longer among its wordings)"))
    return choices


def _short(value: Any, limit: int = 80) -> str:
    text = ", ".join(value) if isinstance(value, list) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ErrorRecordForm(forms.ModelForm):
    solutions = LinesField(help_text="One solution per line, best first.")
    prevention_tips = LinesField(help_text="One tip per line, in order.")
    tags = TagsField(help_text="Separated by commas, in order.")
    accept_collisions = forms.BooleanField(
        required=False,
        label="Accept collisions",
        help_text="Save the pattern even though it also matches other records' messages.",
    )
    accept_incoming = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Take the import's value for",
        help_text="The field goes back to the dataset: later imports update it again.",
    )
    keep_curated = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Keep my value for",
        help_text="Dismiss the conflict; the field stays yours.",
    )
    retired_wordings = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Retired wordings",
        help_text="An older wording that misleads (another error now reads like it): ticked, "
        "it is no longer matched. Imports keep your choice.",
        error_messages={
            "invalid_choice": "Only the record's own older wordings can be retired "
            "(%(value)s is not one of them)."
        },
    )
    change_reason = forms.CharField(
        required=False, max_length=100, label="Reason", help_text="Kept in the history."
    )

    class Meta:
        model = ErrorRecord
        fields = "__all__"  # noqa: DJ007 - ModelAdmin narrows it to its fieldsets

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Dataset keys of the conflicts the curator settles, set by clean().
        self.take_incoming: list[str] = []
        self.keep_mine: list[str] = []
        for name, formfield in self.fields.items():
            # The dataset tells null from "": a nullable text left empty stays null, so
            # saving a form nobody typed in changes nothing (and exports the same).
            if isinstance(formfield, forms.CharField) and name in NULLABLE_TEXT:
                formfield.empty_value = None
        if "message_pattern" in self.fields:
            self.fields["message_pattern"].help_text = (
                "A Python-style regex; placeholders are usually (.+?). Try it on real log "
                "text in the pattern test bench at the bottom of this page."
            )
        retirable = wording_choices(self.instance)
        retired_field = self.fields.get("retired_wordings")
        if retirable and isinstance(retired_field, forms.MultipleChoiceField):
            retired_field.choices = retirable
        else:
            # nothing to retire: no field, so a form without it changes nothing
            self.fields.pop("retired_wordings", None)
        conflicts = self.instance.conflicts or {}
        choices = [
            (key, f"{key}: {_short(c.get('incoming'))}")
            for key, c in conflicts.items()
            if key in BY_KEY
        ]
        for name in ("accept_incoming", "keep_curated"):
            choice_field = self.fields.get(name)  # absent when the admin leaves it out
            if isinstance(choice_field, forms.ChoiceField):
                choice_field.choices = choices
        curated = set(self.instance.curated_fields or [])
        for key in curated:
            field = BY_KEY.get(key)
            if field and field.attr in self.fields:
                note = "Curated: imports keep this value."
                if key in conflicts:
                    note += f" The newest import brings another ({conflicts[key].get('source')})."
                formfield = self.fields[field.attr]
                formfield.help_text = f"{formfield.help_text} {note}".strip()

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns (typed there as optional)
        self.instance.accept_collisions = bool(data.get("accept_collisions"))
        accept = list(data.get("accept_incoming") or [])
        keep = list(data.get("keep_curated") or [])
        both = sorted(set(accept) & set(keep))
        if both:
            raise ValidationError(f"Choose either the import's value or yours for {both}.")
        for key in accept:
            attr = BY_KEY[key].attr
            try:
                value = incoming_value(self.instance, key)
            except FieldError as exc:
                raise ValidationError(f"The import's {key} is not valid: {exc.message}") from None
            # Validated with the rest of the record, as if the curator had typed it.
            if attr in self.fields:
                data[attr] = value
            else:
                setattr(self.instance, attr, value)
        self.take_incoming = accept
        self.keep_mine = keep
        return data


class AddTagForm(forms.Form):
    tag = TagsField(required=True, label="Tag(s) to add", help_text="Separated by commas.")


class UploadForm(forms.Form):
    file = forms.FileField(
        label="JSONL file", help_text="One record a line (the dataset's shape); .gz accepted."
    )
    dry_run = forms.BooleanField(required=False, help_text="Report only, write nothing.")
    atomic = forms.BooleanField(
        required=False, label="All or nothing", help_text="Any rejected line rolls back all."
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        name = upload.name or ""
        if not name.lower().endswith((".jsonl", ".json", ".ndjson", ".jsonl.gz", ".gz")):
            raise ValidationError("Upload a .jsonl file (or .jsonl.gz).")
        return upload
