import { type CallOptions, type Transport } from "./http.js";
import type { Snapshot, SnapshotListOptions } from "./types.js";
/** SnapshotWaitOptions bound a wait for a snapshot to be ready. */
export interface SnapshotWaitOptions extends CallOptions {
    /** waitTimeoutMs gives up after this long (default 5 minutes). */
    waitTimeoutMs?: number;
    /** pollMs is how often the snapshot is read (default 100). */
    pollMs?: number;
}
/** Snapshots finds, waits for and deletes snapshots. */
export declare class Snapshots {
    private readonly t;
    constructor(t: Transport);
    /** get returns snapshot id (NotFoundError when unknown or another tenant's). */
    get(id: string, o?: CallOptions): Promise<Snapshot>;
    /** list lists snapshots, newest first. */
    list(q?: SnapshotListOptions & CallOptions): Promise<Snapshot[]>;
    /** wait waits until snapshot id is ready; failed or deleting is an error. */
    wait(id: string, o?: SnapshotWaitOptions): Promise<Snapshot>;
    /** delete deletes snapshot id (it answers deleting); a ConflictError while a pool fills from it. */
    delete(id: string, o?: CallOptions): Promise<Snapshot>;
}
/** waitSnapshot polls snapshot id until it is ready. */
export declare function waitSnapshot(t: Transport, id: string, o?: SnapshotWaitOptions): Promise<Snapshot>;
