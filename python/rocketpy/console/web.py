"""The console's Flask application: pages that read the cluster, JSON for the live charts, and
one POST endpoint for changes, which answers a confirmation page first (see
:mod:`rocketpy.console.actions`). Templates escape everything they show (message bodies and
properties are data from producers)."""

from __future__ import annotations

import ipaddress
import json
import secrets
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Flask, abort, flash, jsonify, redirect, render_template, request

from rocketpy.admin import Admin
from rocketpy.admin.overview import group_names
from rocketpy.console import actions, queries
from rocketpy.console.actions import parse_time
from rocketpy.errors import RocketpyError
from rocketpy.producer import Producer

T = TypeVar("T")


class Cluster:
    """The console's one connection to the cluster: an :class:`Admin` (used by one request at
    a time) and a producer made on first use, for test messages and resends."""

    def __init__(self, namesrv: str) -> None:
        self.namesrv = namesrv
        self.admin = Admin(namesrv)
        self._lock = threading.Lock()
        self._producer: Producer | None = None

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Runs ``fn(admin, *args)`` under the lock: one request at a time on the Admin."""
        with self._lock:
            return fn(self.admin, *args)

    def producer(self) -> Producer:
        if self._producer is None:
            self._producer = Producer("rocketpy-console", self.namesrv)
            self._producer.start()
        return self._producer

    def close(self) -> None:
        if self._producer is not None:
            self._producer.shutdown()
        self.admin.close()


def host_allowed(host: str, allowed: frozenset[str]) -> bool:
    """Whether a request's ``Host`` (a name or address, maybe with a port) names the console:
    an IP address (a page served from one is of that address's origin), ``localhost``, or a
    name in ``allowed``. Anything else is a page of another site whose name was pointed at
    this address (DNS rebinding)."""
    name = urlsplit(f"//{host}").hostname or ""
    if name == "localhost" or name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def create_app(
    namesrv: str, allowed_hosts: Iterable[str] = (), controller: str | None = None
) -> Flask:
    """The console of the cluster whose name server is ``namesrv`` (``host:port``).

    ``allowed_hosts`` are the names it may be reached by besides ``localhost`` and IP
    addresses (its ``Host`` header is checked on every request, a POST's ``Origin`` too).
    ``controller`` (``host:port`` of a controller, controller mode): the cluster page also
    shows each broker group's master, epochs and replicas as the controller leader knows
    them; without it that section is left out."""
    app = Flask(__name__)
    allowed = frozenset(h.strip().lower() for h in allowed_hosts if h.strip())
    app.secret_key = secrets.token_bytes(32)
    token = secrets.token_urlsafe(24)
    cluster = Cluster(namesrv)
    app.extensions["rocketpy_cluster"] = cluster

    @app.before_request
    def same_site_only() -> None:
        # A page of another site may not read (Host: its name, resolved to us) or change
        # (Origin: its own) anything, whatever token it got hold of.
        if not host_allowed(request.host, allowed):
            abort(
                421, "the console is not served under this name (rocketpy console --allowed-host)"
            )
        origin = request.headers.get("Origin")
        if request.method == "POST" and origin and origin != request.host_url.rstrip("/"):
            abort(403, "a change from a page of another origin")

    @app.context_processor
    def common() -> dict[str, Any]:
        return {
            "namesrv": namesrv,
            "controller_addr": controller,
            "token": token,
            "nav": request.path.split("/")[1],
        }

    @app.errorhandler(RocketpyError)
    def cluster_error(e: RocketpyError) -> tuple[str, int]:
        return render_template("error.html", error=str(e)), 502

    @app.get("/")
    def cluster_page() -> str:
        brokers = cluster.call(queries.cluster)
        replication = None
        if controller:
            names = sorted({b["brokerName"] for b in brokers})
            replication = cluster.call(queries.controller, controller, names)
        return render_template("cluster.html", brokers=brokers, replication=replication)

    @app.get("/api/totals")
    def totals() -> Any:
        return jsonify(cluster.call(queries.totals))

    @app.get("/topics")
    def topics_page() -> str:
        return render_template("topics.html", topics=cluster.call(queries.topics))

    @app.get("/topics/<name>")
    def topic_page(name: str) -> str:
        t = cluster.call(queries.topic, name)
        return render_template("topic.html", t=t, route=json.dumps(t["route"], indent=2))

    @app.get("/groups")
    def groups_page() -> str:
        return render_template("groups.html", groups=cluster.call(queries.groups))

    @app.get("/groups/<name>")
    def group_page(name: str) -> str:
        return render_template("group.html", g=cluster.call(queries.group, name))

    @app.get("/api/groups/<name>/lag")
    def group_lag(name: str) -> Any:
        return jsonify(cluster.call(queries.lag, name))

    @app.get("/messages")
    def messages_page() -> str:
        args = request.args
        by = args.get("by", "key")
        found: list[queries.Found] | None = None
        if by == "key" and args.get("topic") and args.get("key"):
            found = cluster.call(queries.by_key, args["topic"].strip(), args["key"].strip())
        elif by == "id" and args.get("id"):
            found = cluster.call(queries.by_id, args["id"], args.get("topic", "").strip())
        elif by == "time" and args.get("topic") and args.get("begin"):
            begin = parse_time(args["begin"])
            end = parse_time(args["end"]) if args.get("end") else parse_time("now")
            found = cluster.call(queries.by_time, args["topic"].strip(), begin, end)
        return render_template("messages.html", by=by, args=args, found=found)

    @app.get("/dlq")
    def dlq_page() -> str:
        group = (request.args.get("group") or "").strip()
        groups = cluster.call(group_names)
        found = cluster.call(queries.dlq, group) if group else None
        return render_template("dlq.html", group=group, groups=groups, found=found)

    @app.post("/actions/<name>")
    def act(name: str) -> Any:
        action = actions.ACTIONS.get(name)
        if action is None:
            abort(404)
        form = request.form
        if not secrets.compare_digest(form.get("token", ""), token):
            abort(403)
        try:
            if form.get("confirmed") != "yes":
                return render_template(
                    "confirm.html", action=action, name=name, text=action.describe(form), form=form
                )
            ctx = actions.Context(cluster.admin, cluster.producer)
            done = cluster.call(lambda _admin: action.perform(ctx, form))
            flash(done, "ok")
            return redirect(action.back(form))
        except RocketpyError as e:
            return render_template("error.html", error=str(e)), 400

    return app
