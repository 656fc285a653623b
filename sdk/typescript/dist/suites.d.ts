import { type CallOptions, type Transport } from "./http.js";
import { type FollowOptions } from "./events.js";
import type { CaseResult, Comparison, Progress, Run, RunRequest, Suite, SuiteCase, SuiteSpec } from "./types.js";
import { Collection } from "./resources.js";
/** RunOptions: wait for the run's end (and see its progress on the way). */
export interface RunOptions extends CallOptions {
    /** wait waits until the run ended. */
    wait?: boolean;
    /** onProgress sees each progress while waiting. */
    onProgress?: (p: Progress) => void;
}
/** Suites defines and schedules eval suites. */
export declare class Suites extends Collection<Suite, SuiteSpec> {
    private readonly runs;
    constructor(t: Transport, runs: Runs);
    /** create creates a suite, with its cases, from a spec (as the YAML document's spec). */
    create(spec: SuiteSpec, o?: CallOptions): Promise<Suite>;
    /** put creates the suite, or replaces it when its id exists. */
    put(spec: SuiteSpec & {
        id: string;
    }, o?: CallOptions): Promise<Suite>;
    /** cases returns the suite's cases as given, in order. */
    cases(id: string, o?: CallOptions): Promise<SuiteCase[]>;
    /** pause pauses the suite's schedule. */
    pause(id: string, o?: CallOptions): Promise<Suite>;
    /** resume resumes the suite's schedule. */
    resume(id: string, o?: CallOptions): Promise<Suite>;
    /** trigger starts a scheduled run now. */
    trigger(id: string, o?: CallOptions): Promise<Suite>;
    /** run starts a run of the suite (all cases, or a selection); with wait, returns it ended. */
    run(id: string, req?: RunRequest, o?: RunOptions): Promise<Run>;
}
/** final says whether a run has ended. */
export declare function final(r: Run): boolean;
/** Runs reads, follows, compares and cancels runs. */
export declare class Runs {
    private readonly t;
    constructor(t: Transport);
    /** get returns the run with its live progress. */
    get(id: string, o?: CallOptions): Promise<Run>;
    /** list lists runs, newest first. */
    list(q?: CallOptions & {
        suite_id?: string;
        status?: string;
        limit?: number;
    }): Promise<Run[]>;
    /** progress yields the run's progress as it changes, then returns the ended run. */
    progress(id: string, o?: FollowOptions): AsyncGenerator<Progress, Run>;
    /** wait waits until the run ended and returns it (onProgress sees each progress). */
    wait(id: string, o?: RunOptions): Promise<Run>;
    /** results returns the case results in case order. */
    results(id: string, o?: CallOptions): Promise<CaseResult[]>;
    /** resultsStream yields the case results one at a time (JSONL). */
    resultsStream(id: string, o?: CallOptions): AsyncGenerator<CaseResult>;
    /** junit returns the results as JUnit XML. */
    junit(id: string, o?: CallOptions): Promise<string>;
    /** compare compares run id (head) with base by case: regressions, fixes, new, missing, score changes. */
    compare(id: string, base: string, o?: CallOptions): Promise<Comparison>;
    /** cancel cancels the run's unfinished cases. */
    cancel(id: string, o?: CallOptions): Promise<Run>;
}
