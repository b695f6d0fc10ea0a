import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from apps.common.wsgi import RequestBodyReader

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")

application = RequestBodyReader(get_wsgi_application())

# Django imports the URL conf, and with it every view, API and the MCP server, on the first
# request. Done here, a worker is ready before it accepts a connection: under load that
# first request otherwise waited 1-2 s, and the requests queued behind it in the worker too.
import_module(settings.ROOT_URLCONF)
