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
from dptext.service import entities as entities_mod
from dptext.service.keys import KeyStore, key_id
from dptext.service.limits import AuthFailures, LimitExceeded, Limits, RateLimiter
from dptext.service.pool import LM_MECHANISMS, MechanismPool
from dptext.service.reconcile import SERVICE_PRIVATIZE
from dptext.service.spans import entity_spans, spans


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
                                    "without it each text is its own unit (no default person)")
    dataset: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    entities: dict[str, Any] | None = Field(
        None, description="entity mode: replace only the detected identifiers, e.g. "
                          "{\"entities\": \"PHI\", \"detector\": \"spacy\"} (see "
                          "entity_parameters in GET /v1/mechanisms); absent: every word")


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
    entities: dict[str, Any] | None = Field(None, description="not covered: the spans are "
                                            "only known after detection (a 400)")


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

    from dptext.service.jobs import FORMATS, JobStore, read_columns

    def pseudonym_key() -> bytes:
        """The key of hashed columns, kept like the ledger's secret: $DPTEXT_PSEUDONYM_SECRET,
        else beside a SQLite ledger (the command line's key for the same ledger), else in the
        data directory (created 0600 on first use)."""
        from dptext.corpus.columns import pseudonym_key as key

        sqlite = "://" not in ledger.where and ledger.where.endswith((".sqlite", ".db"))
        return (key(ledger=ledger.where) if sqlite else None) or \
            key(data_dir / "pseudonym.key")

    jobs = JobStore(data_dir / "jobs", mechanisms=pool.get, ledger=ledger,
                    max_per_owner=limits.max_jobs_per_owner, pseudonym_key=pseudonym_key)
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
    async def _dptext_error(request, err):  # never a path of the server (issue 47 N7)
        message = str(err)
        for root in {str(jobs.root), str(jobs.root.resolve())}:
            message = message.replace(root, "the job's files")
        return _error(400, message)

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

        entity_parameters = entities_mod.describe()
        out = []
        for name, cls in registered().items():
            # what epsilon means and its measured useful range: the mechanism's declaration
            typical = cls.typical_epsilon
            out.append({"name": name, "summary": cls.summary,
                        "guarantee": cls.guarantee_summary,
                        "epsilon_meaning": typical.meaning if typical else cls.guarantee_summary,
                        "typical_epsilon": typical.text if typical else "",
                        "typical_epsilon_range": typical.to_dict() if typical else None,
                        "typical_epsilon_spaces": {k: t.to_dict() for k, t in
                                                   cls.typical_epsilon_spaces.items()},
                        "entity_parameters": entity_parameters,
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
        ent = entities_mod.parse(body.entities)
        m = pool.get(body.mechanism, params, owner=owner, entities=ent)
        results = pool.privatize(body.mechanism, params, body.texts, owner=owner, entities=ent)
        request_id = secrets.token_hex(8)
        units = body.units or [f"request:{request_id}:{i}" for i in range(len(body.texts))]

        def shown(text: str, r) -> dict:
            refused = getattr(r.report, "withheld", None)  # entity mode: language, leak check
            if refused:
                return {"withheld": True, "reason": refused, "text": None,
                        "report": r.report.to_dict(), "spans": [], "summary": str(r.report)}
            return {"withheld": False, "text": r.text, "report": r.report.to_dict(),
                    "spans": entity_spans(m, text, r.text, r.report) if ent is not None
                    else spans(m, text, r.text), "summary": str(r.report)}

        released = [{**shown(text, r), "unit": unit if body.units else None}
                    for text, unit, r in zip(body.texts, units, results, strict=True)]
        _encode({"results": released})  # a response that cannot be sent fails here, uncharged
        session = LedgerSession(ledger, owner=owner, dataset=body.dataset,
                                mechanism=body.mechanism, params=params,
                                job_key=f"{SERVICE_PRIVATIZE}:{request_id}",
                                origin=SERVICE_PRIVATIZE)
        charged = [i for i, r in enumerate(released) if not r["withheld"]]
        decisions = dict(zip(charged, session.reserve([
            (f"{request_id}:{i}", units[i], privacy_events(results[i].report))
            for i in charged]), strict=True))
        out = [r if i not in decisions or decisions[i].allowed else
               {"withheld": True, "reason": decisions[i].reason, "unit": r["unit"],
                "text": None, "report": None, "spans": [], "summary": None}
               for i, r in enumerate(released)]
        payload = _encode({"release_id": session.release_id, "results": out})
        session.commit([d.charge_id for d in decisions.values()
                        if d.allowed and d.charge_id is not None])
        # committed: nothing may fail the response from here (the texts are charged)
        budget = None
        if body.units:
            try:
                budget = {"dataset": body.dataset, "units": {}}
                for unit in dict.fromkeys(body.units):
                    spent = ledger.spent(unit, owner=owner, dataset=body.dataset, pld=False)
                    budget["units"][unit] = {
                        "spent_epsilon": spent.epsilon_basic, "records": spent.records,
                        "remaining_epsilon": ledger.remaining(unit, owner=owner,
                                                              dataset=body.dataset)}
                extra = _encode({"budget": budget})
            except Exception:  # noqa: BLE001 - the budget is a courtesy; the texts are sent
                extra = b'{"budget":null}'
        else:
            extra = b'{"budget":null}'
        payload = payload[:-1] + b"," + extra[1:]
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
        if body.entities is not None:
            raise DPTextError("/v1/estimate does not cover entity mode (the spans are only "
                              "known after detection): drop \"entities\"")
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

    @app.get("/v1/budgets/{dataset}")
    def get_budget(dataset: str, owner: Owner) -> dict:
        """The per-person budget that applies to the owner's releases of ``dataset`` (the
        strictest of those set for it or for any owner/dataset); 404 when none is set."""
        rows = [b for b in ledger.budgets() if b.owner in (owner, "*")
                and b.dataset in (dataset, "*")]
        if not rows:
            raise StarletteHTTPException(404, f"no budget is set for {dataset!r}: nothing is "
                                              "withheld")
        b = min(rows, key=lambda b: (b.epsilon, b.delta))
        return {"owner": owner, "dataset": dataset, "epsilon": b.epsilon, "delta": b.delta}

    @app.get("/v1/units/{unit}/budget")
    def unit_budget(unit: str, owner: Owner, dataset: str = "default") -> dict:
        spent = ledger.spent(unit, owner=owner, dataset=dataset)
        if spent.records == 0 and spent.pending == 0 and spent.withheld == 0:
            raise StarletteHTTPException(404, f"no unit {unit!r} in your releases of "
                                              f"{dataset!r}")
        return {"unit": unit, "dataset": dataset, "spent": spent.to_dict(),
                "remaining_epsilon": ledger.remaining(unit, owner=owner, dataset=dataset)}

    def upload(file: UploadFile) -> tuple[str, bytes]:
        fmt = Path(file.filename or "").suffix.lower().lstrip(".")
        fmt = {"ndjson": "jsonl"}.get(fmt, fmt)
        if fmt not in FORMATS:
            raise DPTextError(f"a job file must be .csv or .jsonl (.ndjson), got "
                              f"{Path(file.filename or '').name or 'no file name'!r}")
        data = file.file.read(limits.max_upload_bytes + 1)
        if len(data) > limits.max_upload_bytes:
            raise LimitExceeded(413, "max_upload_bytes", limits.max_upload_bytes,
                                f"the file is over {limits.max_upload_bytes} bytes")
        return fmt, data

    def names(value: str | None) -> list[str]:
        return [c.strip() for c in (value or "").split(",") if c.strip()]

    @app.post("/v1/columns")
    def columns(owner: Owner, file: Annotated[UploadFile, File()]) -> dict:
        """The columns of a file (CSV header, keys of the first JSONL records) with the first
        record's value of each, so a page can ask for each column's role; nothing is kept."""
        import tempfile

        fmt, data = upload(file)
        with tempfile.TemporaryDirectory(dir=jobs.root) as tmp:
            path = Path(tmp) / f"upload.{fmt}"
            path.write_bytes(data)
            cols, examples, total = read_columns(path, fmt, [])
        return {"format": fmt, "records": total,
                "columns": [{"name": c, "example": None if v is None else str(v)[:60]}
                            for c, v in zip(cols, examples, strict=True)]}

    @app.post("/v1/jobs", status_code=201)
    def create_job(owner: Owner, file: Annotated[UploadFile, File()],
                   fields: Annotated[str, Form()] = "text",
                   mechanism: Annotated[str, Form()] = "custext",
                   params: Annotated[str, Form()] = "{}",
                   unit_field: Annotated[str | None, Form()] = None,
                   keep: Annotated[str | None, Form()] = None,
                   drop: Annotated[str | None, Form()] = None,
                   hash: Annotated[str | None, Form()] = None,
                   keep_other: Annotated[bool, Form()] = False,
                   entities: Annotated[str | None, Form()] = None,
                   dataset: Annotated[str, Form(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = "default"
                   ) -> dict:
        parsed = _json_object("params", params)
        ent = entities_mod.parse(_json_object("entities", entities)
                                 if entities not in (None, "", "null") else None,
                                 unit_field=unit_field or None, job=True)
        fields_ = names(fields)
        if not fields_ or len(set(fields_)) != len(fields_):
            raise DPTextError("fields must name distinct fields, e.g. text or note,summary")
        # a bad mechanism fails before the upload is kept
        pool.get(mechanism, _params(parsed), owner=owner, entities=ent)
        fmt, data = upload(file)
        with jobs_lock:
            if jobs.active(owner) >= limits.max_jobs_per_owner:
                raise LimitExceeded(429, "max_jobs_per_owner", limits.max_jobs_per_owner,
                                    f"at most {limits.max_jobs_per_owner} jobs at once")
            job = jobs.create(owner=owner, dataset=dataset, mechanism=mechanism,
                              params=_params(parsed), fields=fields_, unit_field=unit_field,
                              fmt=fmt, data=data, keep=names(keep), drop=names(drop),
                              hash=names(hash), keep_other=keep_other, entities=ent,
                              name=Path(file.filename or "").name or "the file")
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
                                              "rejects, report, html") from None
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


def _json_object(name: str, text: str) -> dict:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        raise DPTextError(f"{name} must be a JSON object") from None
    if not isinstance(parsed, dict):
        raise DPTextError(f"{name} must be a JSON object")
    return parsed


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
