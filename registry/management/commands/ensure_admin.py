import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create a superuser with a random password if it does not exist, and print the login once. "
        "An existing user is left alone (its password is never printed or changed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--email", default="admin@example.com")

    def handle(self, *args, username, email, **options):
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            self.stdout.write(f"Admin user '{username}' already exists; its password is unchanged.")
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email=email, password=password)
        self.stdout.write(self.style.SUCCESS("Created the admin user. Log in at /admin/ with:"))
        self.stdout.write(f"  username: {username}")
        self.stdout.write(f"  password: {password}")
