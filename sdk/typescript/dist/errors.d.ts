/** ErrorKind is the errs kind the server names in its error envelope. */
export type ErrorKind = "invalid" | "not_found" | "conflict" | "failed_precondition" | "forbidden" | "unauthenticated" | "resource_exhausted" | "too_large" | "unavailable" | "timeout" | "internal" | "method_not_allowed" | "canceled" | "other";
/** PrimerError is an API failure: kind, message, HTTP status and the input field at fault. */
export declare class PrimerError extends Error {
    /** kind is the envelope's code (errs kind). */
    readonly kind: ErrorKind;
    /** status is the HTTP status; 0 for a failure before any answer, 200 for one inside a stream. */
    readonly status: number;
    /** field names the input field at fault (details.field), when the server said. */
    readonly field?: string;
    /** details is the envelope's details object. */
    readonly details: Record<string, string>;
    /** retryAfter is the Retry-After header in seconds, when the server sent one. */
    readonly retryAfter?: number;
    constructor(kind: ErrorKind, message: string, status: number, details?: Record<string, string>, retryAfter?: number, options?: {
        cause?: unknown;
    });
}
/** InvalidError is a 400: bad input, naming the field. */
export declare class InvalidError extends PrimerError {
}
/** NotFoundError is a 404: unknown id, or another tenant's. */
export declare class NotFoundError extends PrimerError {
}
/** ConflictError is a 409 conflict: the id exists, or the resource is in use. */
export declare class ConflictError extends PrimerError {
}
/** FailedPreconditionError is a 409 failed_precondition: the resource is not in a state that allows the call. */
export declare class FailedPreconditionError extends PrimerError {
}
/** ForbiddenError is a 403: the key's role or tenant may not do this. */
export declare class ForbiddenError extends PrimerError {
}
/** UnauthenticatedError is a 401: no key, a wrong, revoked or expired one. */
export declare class UnauthenticatedError extends PrimerError {
}
/** QuotaExceededError is a 429 resource_exhausted: a quota, a cap or the throttle. */
export declare class QuotaExceededError extends PrimerError {
}
/** TooLargeError is a 413: a body past its limit. */
export declare class TooLargeError extends PrimerError {
}
/** UnavailableError is a 503, or the server could not be reached. */
export declare class UnavailableError extends PrimerError {
}
/** TimeoutError is a 504, or a call that ran past its timeout. */
export declare class TimeoutError extends PrimerError {
}
/** InternalError is a 500. */
export declare class InternalError extends PrimerError {
}
/** CanceledError is a call its AbortSignal stopped. */
export declare class CanceledError extends PrimerError {
}
/** kindForStatus is the kind of an answer that is not an envelope (a proxy's page). */
export declare function kindForStatus(status: number): ErrorKind;
/** makeError builds the PrimerError subclass of kind. */
export declare function makeError(kind: ErrorKind, message: string, status: number, details?: Record<string, string>, retryAfter?: number, cause?: unknown): PrimerError;
/** errorFromEnvelope reads an envelope ({"error": {...}}) found in a body or a stream. */
export declare function errorFromEnvelope(env: unknown, status: number, retryAfter?: number): PrimerError | undefined;
/** errorFromResponse reads a failed response's envelope (at most 64 KiB of it). */
export declare function errorFromResponse(resp: Response): Promise<PrimerError>;
