// Errors: every failure the API reports arrives as a PrimerError whose kind
// is the errs kind of the server's error envelope
// ({"error": {"code", "message", "details"}}), so callers branch on the
// class (NotFoundError) or on err.kind ("not_found") as they would on the
// server side. Transport failures are PrimerError too (kind "unavailable",
// status 0), so one catch covers both.
/** PrimerError is an API failure: kind, message, HTTP status and the input field at fault. */
export class PrimerError extends Error {
    /** kind is the envelope's code (errs kind). */
    kind;
    /** status is the HTTP status; 0 for a failure before any answer, 200 for one inside a stream. */
    status;
    /** field names the input field at fault (details.field), when the server said. */
    field;
    /** details is the envelope's details object. */
    details;
    /** retryAfter is the Retry-After header in seconds, when the server sent one. */
    retryAfter;
    constructor(kind, message, status, details = {}, retryAfter, options) {
        super(message, options);
        this.name = new.target.name;
        this.kind = kind;
        this.status = status;
        this.details = details;
        this.field = details.field;
        this.retryAfter = retryAfter;
    }
}
/** InvalidError is a 400: bad input, naming the field. */
export class InvalidError extends PrimerError {
}
/** NotFoundError is a 404: unknown id, or another tenant's. */
export class NotFoundError extends PrimerError {
}
/** ConflictError is a 409 conflict: the id exists, or the resource is in use. */
export class ConflictError extends PrimerError {
}
/** FailedPreconditionError is a 409 failed_precondition: the resource is not in a state that allows the call. */
export class FailedPreconditionError extends PrimerError {
}
/** ForbiddenError is a 403: the key's role or tenant may not do this. */
export class ForbiddenError extends PrimerError {
}
/** UnauthenticatedError is a 401: no key, a wrong, revoked or expired one. */
export class UnauthenticatedError extends PrimerError {
}
/** QuotaExceededError is a 429 resource_exhausted: a quota, a cap or the throttle. */
export class QuotaExceededError extends PrimerError {
}
/** TooLargeError is a 413: a body past its limit. */
export class TooLargeError extends PrimerError {
}
/** UnavailableError is a 503, or the server could not be reached. */
export class UnavailableError extends PrimerError {
}
/** TimeoutError is a 504, or a call that ran past its timeout. */
export class TimeoutError extends PrimerError {
}
/** InternalError is a 500. */
export class InternalError extends PrimerError {
}
/** CanceledError is a call its AbortSignal stopped. */
export class CanceledError extends PrimerError {
}
const byKind = {
    invalid: InvalidError,
    not_found: NotFoundError,
    conflict: ConflictError,
    failed_precondition: FailedPreconditionError,
    forbidden: ForbiddenError,
    unauthenticated: UnauthenticatedError,
    resource_exhausted: QuotaExceededError,
    too_large: TooLargeError,
    unavailable: UnavailableError,
    timeout: TimeoutError,
    internal: InternalError,
    canceled: CanceledError,
};
/** kindForStatus is the kind of an answer that is not an envelope (a proxy's page). */
export function kindForStatus(status) {
    switch (status) {
        case 400: return "invalid";
        case 401: return "unauthenticated";
        case 403: return "forbidden";
        case 404: return "not_found";
        case 405: return "method_not_allowed";
        case 409: return "conflict";
        case 413: return "too_large";
        case 429: return "resource_exhausted";
        case 502:
        case 503: return "unavailable";
        case 504: return "timeout";
    }
    return status >= 500 ? "internal" : "other";
}
/** makeError builds the PrimerError subclass of kind. */
export function makeError(kind, message, status, details = {}, retryAfter, cause) {
    const C = byKind[kind] ?? PrimerError;
    return new C(kind, message, status, details, retryAfter, cause === undefined ? undefined : { cause });
}
/** errorFromEnvelope reads an envelope ({"error": {...}}) found in a body or a stream. */
export function errorFromEnvelope(env, status, retryAfter) {
    const e = env?.error;
    if (!e || typeof e !== "object" || typeof e.code !== "string")
        return undefined;
    return makeError(e.code, e.message ?? e.code, status, e.details ?? {}, retryAfter);
}
/** errorFromResponse reads a failed response's envelope (at most 64 KiB of it). */
export async function errorFromResponse(resp) {
    const ra = resp.headers.get("Retry-After");
    const retryAfter = ra !== null && /^\d+$/.test(ra.trim()) ? Number(ra) : undefined;
    let text = "";
    try {
        text = await resp.text();
    }
    catch {
        // the body broke: the status alone says enough
    }
    if (text.length > 64 << 10)
        text = text.slice(0, 64 << 10);
    try {
        const e = errorFromEnvelope(JSON.parse(text), resp.status, retryAfter);
        if (e)
            return e;
    }
    catch {
        // not JSON: a proxy's page
    }
    const msg = text.trim() ? `HTTP ${resp.status}: ${text.trim().slice(0, 200)}` : `HTTP ${resp.status} ${resp.statusText}`.trim();
    return makeError(kindForStatus(resp.status), msg, resp.status, {}, retryAfter);
}
