"""The FastAPI application of ``dptext serve``.

Every ``/v1`` request needs ``Authorization: Bearer KEY`` (401 otherwise, nothing charged); an
owner sees and charges only its own jobs and units (anything else is a 404). ``/healthz``,
``/readyz``, the web page (``/``) and the API docs (``/docs``, ``/openapi.json``) carry no data
and need no key. Every release goes through the ledger as in the CLI: charged before the text
leaves, a text over its unit's budget is withheld and not charged. Errors are JSON
(``{"error": ..., "limit": ...}``), never a stack trace.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Header, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from dptext.corpus.budget import LedgerSession, privacy_events
from dptext.errors import DPTextError
from dptext.service.keys import KeyStore, key_id
from dptext.service.limits import AuthFailures, LimitExceeded, Limits, RateLimiter
from dptext.service.pool import LM_MECHANISMS, MechanismPool
from dptext.service.reconcile import SERVICE_PRIVATIZE
from dptext.service.spans import spans


@dataclass
class Settings:
    ledger: str | None = None          # URL or path; None: $DPTEXT_LEDGER or the data dir
    data_dir: Path | None = None       # jobs live here; None: beside the ledger
    limits: Limits = field(default_factory=Limits)
    batch_window: float = 0.01


class PrivatizeRequest(BaseModel):
    texts: list[str] = Field(min_length=1, description="texts to privatize")
    mechanism: str = Field("custext", description="see GET /v1/mechanisms")
    params: dict[str, Any] = Field(default_factory=dict,
                                   description="mechanism parameters, e.g. {\"epsilon\": 2}")
    units: list[str] | None = Field(None, description="privacy unit (person) of each text; "
                                    "without it each text is its own unit")
    dataset: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")


class EstimateRequest(BaseModel):
    texts: list[str] = Field(min_length=1, description="texts to estimate (nothing is "
                             "privatized, charged or stored)")
    mechanism: str = Field("custext", description="see GET /v1/mechanisms")
    params: dict[str, Any] = Field(default_factory=dict,
                                   description="mechanism parameters, e.g. {\"epsilon\": 2} or "
                                               "{\"document_epsilon\": 40}")
    units: list[str] | None = Field(None, description="privacy unit (person) of each text")
    dataset: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    budget: float | None = Field(None, gt=0, le=1e6, allow_inf_nan=False,
                                 description="per-person epsilon to check withholding "
                                             "against; without it, what each unit may still "
                                             "spend in the ledger")


class BudgetRequest(BaseModel):
    dataset: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    epsilon: float = Field(gt=0, le=1e6, allow_inf_nan=False)
    delta: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False)


_NO_KEY = "a valid API key is needed: Authorization: Bearer KEY"



def _token(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


def _owner(request: Request, authorization: Annotated[str | None, Header()] = None) -> str:
    """The owner of the request's API key (checked by the middleware before the body is
    read; 401 without a valid one)."""
    owner = getattr(request.state, "owner", None)
    if owner is None:  # not through the middleware (cannot happen for /v1): check here
        owner = request.app.state.keys.authenticate(_token(authorization))
        if owner is None:
            raise StarletteHTTPException(401, _NO_KEY)
    return owner


Owner = Annotated[str, Depends(_owner)]


def _error(status: int, message: str, **extra) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split()), **extra}, status_code=status)


def create_app(settings: Settings | None = None) -> FastAPI:
    from dptext.ledger import Ledger

    settings = settings or Settings()
    limits = settings.limits
    ledger = Ledger(settings.ledger)
    keys = KeyStore(ledger.url if settings.ledger is None else settings.ledger)
    data_dir = Path(settings.data_dir or (Path(ledger.where).parent / "service"))
    pool = MechanismPool(batch_window=settings.batch_window,
                         max_mechanisms=limits.max_mechanisms,
                         max_bytes=limits.max_mechanism_bytes,
                         max_new_per_owner_hour=limits.max_new_mechanisms_per_owner_hour)
    rate = RateLimiter(limits.rate_per_second, limits.rate_burst)
    failures = AuthFailures(limits.auth_failure_rate, limits.auth_failure_burst)

    from dptext.service.jobs import JobStore

    jobs = JobStore(data_dir / "jobs", mechanisms=pool.get, ledger=ledger,
                    max_per_owner=limits.max_jobs_per_owner)
    jobs_lock = threading.Lock()

    app = FastAPI(title="dptext", version=_version(),
                  description="Differentially private text: privatize texts and files with "
                              "per-person budgets. Every /v1 request needs "
                              "`Authorization: Bearer KEY` (`dptext keys create OWNER`).")
    app.state.ledger, app.state.keys, app.state.pool, app.state.jobs = ledger, keys, pool, jobs
    app.state.ready = True
    app.state.rate, app.state.auth_failures = rate, failures

    # ---------------------------------------------------------------- errors
    @app.exception_handler(DPTextError)
    async def _dptext_error(request, err):
        return _error(400, str(err))

    @app.exception_handler(LimitExceeded)
    async def _limit(request, err):
        return _error(err.status, str(err), limit=err.limit, value=err.value)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, err):
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()))
        return _error(422, f"invalid request: {where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request, err):
        return _error(err.status_code, err.detail if isinstance(err.detail, str) else "error")

    @app.exception_handler(Exception)
    async def _internal(request, err):  # never a stack trace in a response
        return _error(500, "internal error")

    @app.middleware("http")
    async def _body_limit(request: Request, call_next):
        if request.url.path.startswith("/v1"):  # the key first: nothing is read without one
            token = _token(request.headers.get("authorization"))
            kid = key_id(token)
            address = request.client.host if request.client else None
            owner = None
            if kid is not None:  # a well-formed key costs a hash: failures are limited first
                try:
                    failures.check(kid, address)
                except LimitExceeded as err:
                    owner = keys.authenticate(token, verify=False)  # no hash
                    if owner is None:
                        return _error(err.status, str(err), limit=err.limit, value=err.value)
                if owner is None:
                    owner = keys.authenticate(token)
                    if owner is None:
                        failures.fail(kid, address)
            if owner is None:
                return _error(401, _NO_KEY)
            try:
                rate.take(token)
            except LimitExceeded as err:
                return _error(err.status, str(err), limit=err.limit, value=err.value)
            request.state.owner = owner
        limit = (limits.max_upload_bytes if request.url.path.startswith("/v1/jobs")
                 else limits.max_body_bytes)
        length = request.headers.get("content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                return _error(400, "bad Content-Length header")
            if size > limit:
                return _error(413, f"request body over the limit of {limit} bytes",
                              limit="max_body_bytes" if limit == limits.max_body_bytes
                              else "max_upload_bytes", value=limit)
        elif request.method in ("POST", "PUT", "PATCH"):
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    return _error(413, f"request body over the limit of {limit} bytes",
                                  limit="max_body_bytes", value=limit)

            async def receive():
                return {"type": "http.request", "body": body, "more_body": False}

            request = Request(request.scope, receive)
        return await call_next(request)

    # --------------------------------------------------------------- public
    @app.get("/healthz", include_in_schema=True)
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        ok = app.state.ready
        return JSONResponse({"ready": ok, "mechanisms_loaded": len(pool.loaded)},
                            status_code=200 if ok else 503)

    static = files("dptext.service").joinpath("static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(static.joinpath("index.html").read_text(encoding="utf-8"))

    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    # ------------------------------------------------------------------- v1
    @app.get("/v1/mechanisms")
    def mechanisms(owner: Owner) -> list[dict]:
        from dptext.mechanisms.registry import REQUIRED, parameters, registered

        out = []
        for name, cls in registered().items():
            # what epsilon means and its measured useful range: the mechanism's declaration
            typical = cls.typical_epsilon
            out.append({"name": name, "summary": cls.summary,
                        "guarantee": cls.guarantee_summary,
                        "epsilon_meaning": typical.meaning if typical else cls.guarantee_summary,
                        "typical_epsilon": typical.text if typical else "",
                        "typical_epsilon_range": typical.to_dict() if typical else None,
                        "language_model": name in LM_MECHANISMS,
                        "parameters": {k: (None if v == REQUIRED else _plain(v))
                                       for k, v in parameters(cls).items()
                                       if k not in ("space", "frequencies")}})
        return out

    @app.post("/v1/privatize")
    def privatize(body: PrivatizeRequest, owner: Owner) -> Response:
        # Everything that can fail runs before the ledger is charged: the request is checked
        # (sizes, units, text that JSON cannot carry back), the texts privatized and their
        # spans and response built and encoded; only then are the records reserved, the
        # response's bytes completed with the decisions, and the charges committed.
        _check_texts(body, limits)
        params = _params(body.params)
        m = pool.get(body.mechanism, params, owner=owner)
        results = pool.privatize(body.mechanism, params, body.texts, owner=owner)
        request_id = secrets.token_hex(8)
        units = body.units or [f"request:{request_id}:{i}" for i in range(len(body.texts))]
        released = [{"withheld": False, "unit": unit if body.units else None,
                     "text": r.text, "report": r.report.to_dict(),
                     "spans": spans(m, text, r.text)}
                    for text, unit, r in zip(body.texts, units, results, strict=True)]
        _encode({"results": released})  # a response that cannot be sent fails here, uncharged
        session = LedgerSession(ledger, owner=owner, dataset=body.dataset,
                                mechanism=body.mechanism, params=params,
                                job_key=f"{SERVICE_PRIVATIZE}:{request_id}",
                                origin=SERVICE_PRIVATIZE)
        decisions = session.reserve([
            (f"{request_id}:{i}", unit, privacy_events(r.report))
            for i, (unit, r) in enumerate(zip(units, results, strict=True))])
        out = [r if d.allowed else {"withheld": True, "reason": d.reason, "unit": unit,
                                    "text": None, "report": None, "spans": []}
               for r, unit, d in zip(released, units, decisions, strict=True)]
        payload = _encode({"release_id": session.release_id, "results": out})
        session.commit([d.charge_id for d in decisions
                        if d.allowed and d.charge_id is not None])
        return Response(payload, media_type="application/json")

    @app.post("/v1/estimate")
    def estimate(body: EstimateRequest, owner: Owner) -> dict:
        """The dry run of /v1/privatize (dptext.corpus.estimate): what each text and person
        would be charged and what the budget would withhold; nothing is privatized, charged
        or stored. Without ``budget``, each unit's remaining epsilon in the ledger is used
        (a text without a unit: the dataset's budget, as for a new person)."""
        from dptext.corpus.estimate import CostEstimate
        from dptext.mechanisms.registry import mechanism, registered
        from dptext.mechanisms.word import WordMechanism

        _check_texts(body, limits)
        params = _params(body.params)
        cls = registered().get(body.mechanism)
        if cls is not None and issubclass(cls, WordMechanism):
            m = mechanism(body.mechanism, **params)  # counting needs the space, no table
        else:  # a language model: the pool's loaded one
            m = pool.get(body.mechanism, params, owner=owner)
        m.check_admissible()
        fresh = f"estimate:{secrets.token_hex(8)}"  # a unit that has spent nothing

        def remaining(unit: str) -> float | None:
            return ledger.remaining(unit, owner=owner, dataset=body.dataset)

        est = CostEstimate(m, budget=body.budget,
                           unit_field="units" if body.units is not None else None,
                           remaining=None if body.budget is not None else remaining)
        if body.budget is None:
            est.budget = remaining(fresh)
        est.add_texts(body.texts, body.units)
        return est.summary()

    @app.post("/v1/budgets")
    def set_budget(body: BudgetRequest, owner: Owner) -> dict:
        ledger.set_budget(owner, body.dataset, body.epsilon, body.delta)
        return {"owner": owner, "dataset": body.dataset, "epsilon": body.epsilon,
                "delta": body.delta}

    @app.get("/v1/units/{unit}/budget")
    def unit_budget(unit: str, owner: Owner, dataset: str = "default") -> dict:
        spent = ledger.spent(unit, owner=owner, dataset=dataset)
        if spent.records == 0 and spent.pending == 0 and spent.withheld == 0:
            raise StarletteHTTPException(404, f"no unit {unit!r} in your releases of "
                                              f"{dataset!r}")
        return {"unit": unit, "dataset": dataset, "spent": spent.to_dict(),
                "remaining_epsilon": ledger.remaining(unit, owner=owner, dataset=dataset)}

    @app.post("/v1/jobs", status_code=201)
    def create_job(owner: Owner, file: Annotated[UploadFile, File()],
                   fields: Annotated[str, Form()] = "text",
                   mechanism: Annotated[str, Form()] = "custext",
                   params: Annotated[str, Form()] = "{}",
                   unit_field: Annotated[str | None, Form()] = None,
                   dataset: Annotated[str, Form(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = "default"
                   ) -> dict:
        try:
            parsed = json.loads(params)
        except json.JSONDecodeError:
            raise DPTextError("params must be a JSON object") from None
        if not isinstance(parsed, dict):
            raise DPTextError("params must be a JSON object")
        names = [f.strip() for f in fields.split(",") if f.strip()]
        if not names or len(set(names)) != len(names):
            raise DPTextError("fields must name distinct fields, e.g. text or note,summary")
        fmt = Path(file.filename or "").suffix.lower().lstrip(".")
        fmt = {"ndjson": "jsonl"}.get(fmt, fmt)
        # a bad mechanism fails before the upload is kept
        pool.get(mechanism, _params(parsed), owner=owner)
        data = file.file.read(limits.max_upload_bytes + 1)
        if len(data) > limits.max_upload_bytes:
            raise LimitExceeded(413, "max_upload_bytes", limits.max_upload_bytes,
                                f"the file is over {limits.max_upload_bytes} bytes")
        with jobs_lock:
            if jobs.active(owner) >= limits.max_jobs_per_owner:
                raise LimitExceeded(429, "max_jobs_per_owner", limits.max_jobs_per_owner,
                                    f"at most {limits.max_jobs_per_owner} jobs at once")
            job = jobs.create(owner=owner, dataset=dataset, mechanism=mechanism,
                              params=_params(parsed), fields=names, unit_field=unit_field,
                              fmt=fmt, data=data)
        jobs.start(job)
        return job.public()

    def own_job(job_id: str, owner: str):
        try:
            job = jobs.load(job_id)
        except KeyError:
            job = None
        if job is None or job.owner != owner:
            raise StarletteHTTPException(404, f"no job {job_id!r}")
        return job

    @app.get("/v1/jobs")
    def list_jobs(owner: Owner) -> list[dict]:
        return [j.public() for j in jobs.jobs(owner)]

    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: str, owner: Owner) -> dict:
        return own_job(job_id, owner).public()

    @app.get("/v1/jobs/{job_id}/{what}")
    def download(job_id: str, what: str, owner: Owner) -> Response:
        job = own_job(job_id, owner)
        try:
            path = jobs.output_path(job, what)
        except KeyError:
            raise StarletteHTTPException(404, f"nothing called {what!r}; one of output, "
                                              "rejects, report") from None
        if job.state != "done":
            raise StarletteHTTPException(409, f"job {job_id} is {job.state}, not done")
        if not path.is_file():
            raise StarletteHTTPException(404, f"no {what} for job {job_id}")
        return FileResponse(path, filename=f"{job_id}-{path.name}")

    # dp_accounting (the PLD column of every budget answer) takes seconds to import: do it
    # now, not in the first budget request
    import dp_accounting.pld.privacy_loss_distribution  # noqa: F401

    jobs.resume_all()
    return app


def app_from_environment() -> FastAPI:
    """The app of one ``dptext serve --workers N`` worker process."""
    limits = Limits(**json.loads(os.environ.get("DPTEXT_SERVICE_LIMITS") or "{}"))
    return create_app(Settings(ledger=os.environ.get("DPTEXT_SERVICE_LEDGER") or None,
                               data_dir=os.environ.get("DPTEXT_SERVICE_DATA") or None,
                               limits=limits))


def _check_texts(body, limits) -> None:
    """What /v1/privatize and /v1/estimate check of a request's texts and units before any
    work: the size limits, one unit per text, and text JSON can carry (413 / 400)."""
    if len(body.texts) > limits.max_texts:
        raise LimitExceeded(413, "max_texts", limits.max_texts,
                            f"at most {limits.max_texts} texts per request")
    long = next((i for i, t in enumerate(body.texts) if len(t) > limits.max_chars), None)
    if long is not None:
        raise LimitExceeded(413, "max_chars", limits.max_chars,
                            f"text {long} is over {limits.max_chars} characters")
    if body.units is not None and len(body.units) != len(body.texts):
        raise DPTextError("units must give one unit per text")
    _check_unicode("texts", body.texts)
    _check_unicode("units", body.units or [])


def _check_unicode(what: str, values) -> None:
    """Refuse text that UTF-8 (and so the JSON response) cannot carry: a lone surrogate such
    as ``"\\ud800"`` is valid in a JSON string but not in Unicode text."""
    for i, value in enumerate(values):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise DPTextError(f"{what}[{i}] has a character that is not valid Unicode text "
                              f"({err.reason} at {err.start}): a lone surrogate "
                              f"{value[err.start]!r}") from None


def _encode(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


def _plain(value):
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


def _params(params: dict) -> dict:
    """Mechanism parameters from JSON: the space and user frequency tables are not settable
    through the service."""
    for name in ("space", "frequencies", "model"):
        if name in params:
            raise DPTextError(f"parameter {name!r} cannot be set through the service")
    return dict(params)


def _version() -> str:
    from dptext import __version__

    return os.environ.get("DPTEXT_VERSION", __version__)
