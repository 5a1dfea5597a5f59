"""``manage.py create_curator USERNAME [--email E] [--password-from-env VAR]``.

A curator is a staff user in the "Curators" group (made by a migration): enough to edit,
publish, retire, tag and import records in the admin, and nothing more. Without a
password option the user is created with an unusable password (set one with
``manage.py changepassword``); an existing user is added to the group.
"""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser

GROUP = "Curators"


class Command(BaseCommand):
    help = "Create a curator (staff, in the Curators group; not a superuser)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-from-env",
            metavar="VAR",
            help="read the password from this environment variable (never from argv)",
        )
        parser.add_argument("--dry-run", action="store_true", help="say what would happen")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            group = Group.objects.get(name=GROUP)
        except Group.DoesNotExist:
            raise CommandError(f'No "{GROUP}" group: run "manage.py migrate" first.') from None
        password = None
        if options["password_from_env"]:
            password = os.environ.get(options["password_from_env"])
            if not password:
                raise CommandError(f"${options['password_from_env']} is empty or not set")
        username = options["username"]
        user = User.objects.filter(username=username).first()
        if options["dry_run"]:
            verb = "add existing user" if user else "create user"
            self.stdout.write(f"Would {verb} {username!r} to {GROUP}.")
            return
        if user is None:
            user = User.objects.create_user(username, options["email"], password, is_staff=True)
            action = "Created"
        else:
            user.is_staff = True
            if password:
                user.set_password(password)
            user.save()
            action = "Updated"
        user.groups.add(group)
        self.stdout.write(self.style.SUCCESS(f"{action} curator {username!r} (group {GROUP})."))
        if int(options["verbosity"]) > 1 and not user.has_usable_password():
            self.stdout.write(f'Set a password with "manage.py changepassword {username}".')
