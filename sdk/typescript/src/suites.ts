// Eval suites and their runs: define a suite in code, run it (and wait,
// following its progress), read results as objects, JSONL or JUnit XML,
// and compare two runs.

import { makeError } from "./errors.js";
import { type CallOptions, type Transport, seg } from "./http.js";
import { type FollowOptions, followSSE } from "./events.js";
import { lines } from "./streams.js";
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
export class Suites extends Collection<Suite, SuiteSpec> {
  constructor(t: Transport, private readonly runs: Runs) { super(t, "/v1/suites"); }

  /** create creates a suite, with its cases, from a spec (as the YAML document's spec). */
  override create(spec: SuiteSpec, o: CallOptions = {}): Promise<Suite> {
    return super.create(spec, o);
  }

  /** put creates the suite, or replaces it when its id exists. */
  async put(spec: SuiteSpec & { id: string }, o: CallOptions = {}): Promise<Suite> {
    try {
      return await this.create(spec, o);
    } catch (e) {
      if ((e as { kind?: string }).kind !== "conflict") throw e;
      return this.update(spec.id, spec, o);
    }
  }

  /** cases returns the suite's cases as given, in order. */
  async cases(id: string, o: CallOptions = {}): Promise<SuiteCase[]> {
    return (await this.t.json<{ items: SuiteCase[] }>({ method: "GET", path: `/v1/suites/${seg(id)}/cases`, signal: o.signal, timeoutMs: o.timeoutMs })).items;
  }

  /** pause pauses the suite's schedule. */
  pause(id: string, o: CallOptions = {}): Promise<Suite> {
    return this.t.json<Suite>({ method: "POST", path: `/v1/suites/${seg(id)}/schedule/pause`, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** resume resumes the suite's schedule. */
  resume(id: string, o: CallOptions = {}): Promise<Suite> {
    return this.t.json<Suite>({ method: "POST", path: `/v1/suites/${seg(id)}/schedule/resume`, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** trigger starts a scheduled run now. */
  trigger(id: string, o: CallOptions = {}): Promise<Suite> {
    return this.t.json<Suite>({ method: "POST", path: `/v1/suites/${seg(id)}/schedule/trigger`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** run starts a run of the suite (all cases, or a selection); with wait, returns it ended. */
  async run(id: string, req: RunRequest = {}, o: RunOptions = {}): Promise<Run> {
    const run = await this.t.json<Run>({ method: "POST", path: `/v1/suites/${seg(id)}/runs`, json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    return o.wait ? this.runs.wait(run.id, o) : run;
  }
}

/** final says whether a run has ended. */
export function final(r: Run): boolean {
  return r.status === "succeeded" || r.status === "canceled" || r.status === "failed";
}

/** Runs reads, follows, compares and cancels runs. */
export class Runs {
  constructor(private readonly t: Transport) {}

  /** get returns the run with its live progress. */
  get(id: string, o: CallOptions = {}): Promise<Run> {
    return this.t.json<Run>({ method: "GET", path: `/v1/runs/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** list lists runs, newest first. */
  async list(q: CallOptions & { suite_id?: string; status?: string; limit?: number } = {}): Promise<Run[]> {
    const { signal, timeoutMs, ...query } = q;
    return (await this.t.json<{ items: Run[] }>({ method: "GET", path: "/v1/runs", query, signal, timeoutMs })).items;
  }

  /** progress yields the run's progress as it changes, then returns the ended run. */
  async *progress(id: string, o: FollowOptions = {}): AsyncGenerator<Progress, Run> {
    let end: Run | undefined;
    type Item = { progress?: Progress; run?: Run };
    const it = followSSE<Item>(this.t, `/v1/runs/${seg(id)}/events`, {}, o,
      (event, data) => (event === "finished" ? { run: JSON.parse(data) as Run } : event === "progress" ? { progress: JSON.parse(data) as Progress } : undefined),
      (event) => event === "finished");
    for await (const v of it) {
      if (v.run) end = v.run;
      else if (v.progress) yield v.progress;
    }
    if (!end) throw makeError("internal", `run ${id}: events ended without the run`, 200);
    return end;
  }

  /** wait waits until the run ended and returns it (onProgress sees each progress). */
  async wait(id: string, o: RunOptions = {}): Promise<Run> {
    const it = this.progress(id, o);
    for (;;) {
      const n = await it.next();
      if (n.done) return n.value;
      o.onProgress?.(n.value);
    }
  }

  /** results returns the case results in case order. */
  async results(id: string, o: CallOptions = {}): Promise<CaseResult[]> {
    return (await this.t.json<{ items: CaseResult[] }>({ method: "GET", path: `/v1/runs/${seg(id)}/results`, signal: o.signal, timeoutMs: o.timeoutMs })).items;
  }

  /** resultsStream yields the case results one at a time (JSONL). */
  async *resultsStream(id: string, o: CallOptions = {}): AsyncGenerator<CaseResult> {
    const resp = await this.t.send({ method: "GET", path: `/v1/runs/${seg(id)}/results`, query: { format: "jsonl" }, stream: true, signal: o.signal, timeoutMs: o.timeoutMs });
    for await (const line of lines(resp.body)) if (line) yield JSON.parse(line) as CaseResult;
  }

  /** junit returns the results as JUnit XML. */
  async junit(id: string, o: CallOptions = {}): Promise<string> {
    return (await this.t.send({ method: "GET", path: `/v1/runs/${seg(id)}/results`, query: { format: "junit" }, signal: o.signal, timeoutMs: o.timeoutMs })).text();
  }

  /** compare compares run id (head) with base by case: regressions, fixes, new, missing, score changes. */
  compare(id: string, base: string, o: CallOptions = {}): Promise<Comparison> {
    return this.t.json<Comparison>({ method: "GET", path: `/v1/runs/${seg(id)}/compare`, query: { base }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** cancel cancels the run's unfinished cases. */
  cancel(id: string, o: CallOptions = {}): Promise<Run> {
    return this.t.json<Run>({ method: "POST", path: `/v1/runs/${seg(id)}/cancel`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }
}
