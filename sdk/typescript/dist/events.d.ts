import { type CallOptions, type Transport } from "./http.js";
import type { Event } from "./types.js";
/** FollowOptions say where a stream starts and how it resumes. */
export interface FollowOptions extends CallOptions {
    /** after starts after this event id (resume from a saved cursor). */
    after?: number;
    /** reconnectDelayMs waits this long before resuming a dropped stream (default 500). */
    reconnectDelayMs?: number;
}
/**
 * followSSE yields the events of path's SSE stream, reconnecting with
 * Last-Event-ID after a drop until the server ends the stream (ends
 * says when an event is the last) or the signal aborts. Errors the server
 * sends (event: error) and refusals (4xx) end it with a PrimerError.
 */
export declare function followSSE<T>(t: Transport, path: string, query: Record<string, string | undefined>, o: FollowOptions, decode: (event: string, data: string) => T | undefined, ends: (event: string, v: T | undefined) => boolean): AsyncGenerator<T>;
/** decodeEvent decodes an event's data. */
export declare function decodeEvent(_event: string, data: string): Event;
/** TenantEvents reads the events of the caller's tenant across its workspaces. */
export declare class TenantEvents {
    private readonly t;
    constructor(t: Transport);
    /** list returns a page of stored events after `after` and the newest id. */
    list(o?: CallOptions & {
        after?: number;
        limit?: number;
        tenant?: string;
    }): Promise<{
        items: Event[];
        latest_id: number;
    }>;
    /** follow yields stored events after `after`, then new ones as they happen; it never ends by itself (abort the signal or break). */
    follow(o?: FollowOptions & {
        tenant?: string;
    }): AsyncGenerator<Event>;
}
