from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench"
    label = "bench"
    verbose_name = "Benchmark tools"

    def ready(self) -> None:
        # Registers the bench tools' python executors.
        from . import tools  # noqa: F401
