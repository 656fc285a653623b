/** FetchLike is the fetch the client calls (globalThis.fetch by default). */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;
/** RetryOptions bound the retries of idempotent calls. */
export interface RetryOptions {
    /** attempts is the most tries of one call, the first included (default 3). */
    attempts?: number;
    /** baseDelayMs is the first backoff (default 100), doubled each try with jitter. */
    baseDelayMs?: number;
    /** maxDelayMs caps one backoff (default 2000). */
    maxDelayMs?: number;
}
/** CallOptions are what every call of the client takes. */
export interface CallOptions {
    /** signal stops the call (and its stream): it then rejects with CanceledError. */
    signal?: AbortSignal;
    /** timeoutMs overrides the client's timeout for this call; 0 means none. */
    timeoutMs?: number;
}
/** Request is one call as the resources describe it. */
export interface Request extends CallOptions {
    method: string;
    path: string;
    query?: Record<string, string | number | boolean | undefined>;
    /** json is sent as a JSON body. */
    json?: unknown;
    /** body is sent as is (files, JSONL). */
    body?: BodyInit;
    headers?: Record<string, string>;
    /** idempotent says the call may be repeated after a failure that did not reach the handler or a 502/503/504/429. GET, HEAD, PUT and DELETE are by default. */
    idempotent?: boolean;
    /** stream says the answer is read as a stream: the timeout then covers only the wait for the headers. */
    stream?: boolean;
}
/** TransportOptions configure the transport. */
export interface TransportOptions {
    baseUrl: string;
    token?: string;
    fetch?: FetchLike;
    timeoutMs?: number;
    retry?: RetryOptions;
    userAgent?: string;
}
/** Transport sends requests to one server. */
export declare class Transport {
    readonly baseUrl: string;
    readonly token?: string;
    readonly timeoutMs: number;
    private readonly fetchFn;
    private readonly attempts;
    private readonly baseDelay;
    private readonly maxDelay;
    private readonly userAgent?;
    constructor(o: TransportOptions);
    /** url builds the address of path with query. */
    url(path: string, query?: Request["query"]): string;
    /** headers are the headers every request carries. */
    headers(extra?: Record<string, string>): Record<string, string>;
    /**
     * send makes the call and returns the successful response (status < 400);
     * a failure is thrown as PrimerError. A streaming response's body is the
     * caller's to read or cancel; any other's is read already (within the
     * timeout) and may be read again from the returned Response.
     */
    send(r: Request): Promise<Response>;
    /** json makes the call and decodes its JSON answer (undefined for 204 or an empty body). */
    json<T>(r: Request): Promise<T>;
    private retrying;
    private once;
}
/** sleep waits ms, or rejects with CanceledError when signal aborts. */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
/**
 * seg escapes one path segment. An empty, "." or ".." id is refused: a URL
 * parser would drop or resolve it (even escaped as %2E), and the call would
 * reach another route.
 */
export declare function seg(s: string): string;
