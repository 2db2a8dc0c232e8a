"""Signals other apps may listen to (they sit above observations and import it, never
the other way round).

``replay_compared``: ``replay compare`` judged two result sets; sent with ``a_label``,
``b_label`` and ``verdicts``, a list of ``(subject, verdict, reason)``. The eval
ledger (evals/) stores them; a receiver returns how many it stored.
"""

from __future__ import annotations

from django.dispatch import Signal

replay_compared = Signal()
