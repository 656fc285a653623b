// Eval suites and their runs: define a suite in code, run it (and wait,
// following its progress), read results as objects, JSONL or JUnit XML,
// and compare two runs.
import { makeError } from "./errors.js";
import { seg } from "./http.js";
import { followSSE } from "./events.js";
import { lines } from "./streams.js";
import { Collection } from "./resources.js";
/** Suites defines and schedules eval suites. */
export class Suites extends Collection {
    runs;
    constructor(t, runs) {
        super(t, "/v1/suites");
        this.runs = runs;
    }
    /** create creates a suite, with its cases, from a spec (as the YAML document's spec). */
    create(spec, o = {}) {
        return super.create(spec, o);
    }
    /** put creates the suite, or replaces it when its id exists. */
    async put(spec, o = {}) {
        try {
            return await this.create(spec, o);
        }
        catch (e) {
            if (e.kind !== "conflict")
                throw e;
            return this.update(spec.id, spec, o);
        }
    }
    /** cases returns the suite's cases as given, in order. */
    async cases(id, o = {}) {
        return (await this.t.json({ method: "GET", path: `/v1/suites/${seg(id)}/cases`, signal: o.signal, timeoutMs: o.timeoutMs })).items;
    }
    /** pause pauses the suite's schedule. */
    pause(id, o = {}) {
        return this.t.json({ method: "POST", path: `/v1/suites/${seg(id)}/schedule/pause`, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** resume resumes the suite's schedule. */
    resume(id, o = {}) {
        return this.t.json({ method: "POST", path: `/v1/suites/${seg(id)}/schedule/resume`, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** trigger starts a scheduled run now. */
    trigger(id, o = {}) {
        return this.t.json({ method: "POST", path: `/v1/suites/${seg(id)}/schedule/trigger`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** run starts a run of the suite (all cases, or a selection); with wait, returns it ended. */
    async run(id, req = {}, o = {}) {
        const run = await this.t.json({ method: "POST", path: `/v1/suites/${seg(id)}/runs`, json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        return o.wait ? this.runs.wait(run.id, o) : run;
    }
}
/** final says whether a run has ended. */
export function final(r) {
    return r.status === "succeeded" || r.status === "canceled" || r.status === "failed";
}
/** Runs reads, follows, compares and cancels runs. */
export class Runs {
    t;
    constructor(t) {
        this.t = t;
    }
    /** get returns the run with its live progress. */
    get(id, o = {}) {
        return this.t.json({ method: "GET", path: `/v1/runs/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** list lists runs, newest first. */
    async list(q = {}) {
        const { signal, timeoutMs, ...query } = q;
        return (await this.t.json({ method: "GET", path: "/v1/runs", query, signal, timeoutMs })).items;
    }
    /** progress yields the run's progress as it changes, then returns the ended run. */
    async *progress(id, o = {}) {
        let end;
        const it = followSSE(this.t, `/v1/runs/${seg(id)}/events`, {}, o, (event, data) => (event === "finished" ? { run: JSON.parse(data) } : event === "progress" ? { progress: JSON.parse(data) } : undefined), (event) => event === "finished");
        for await (const v of it) {
            if (v.run)
                end = v.run;
            else if (v.progress)
                yield v.progress;
        }
        if (!end)
            throw makeError("internal", `run ${id}: events ended without the run`, 200);
        return end;
    }
    /** wait waits until the run ended and returns it (onProgress sees each progress). */
    async wait(id, o = {}) {
        const it = this.progress(id, o);
        for (;;) {
            const n = await it.next();
            if (n.done)
                return n.value;
            o.onProgress?.(n.value);
        }
    }
    /** results returns the case results in case order. */
    async results(id, o = {}) {
        return (await this.t.json({ method: "GET", path: `/v1/runs/${seg(id)}/results`, signal: o.signal, timeoutMs: o.timeoutMs })).items;
    }
    /** resultsStream yields the case results one at a time (JSONL). */
    async *resultsStream(id, o = {}) {
        const resp = await this.t.send({ method: "GET", path: `/v1/runs/${seg(id)}/results`, query: { format: "jsonl" }, stream: true, signal: o.signal, timeoutMs: o.timeoutMs });
        for await (const line of lines(resp.body))
            if (line)
                yield JSON.parse(line);
    }
    /** junit returns the results as JUnit XML. */
    async junit(id, o = {}) {
        return (await this.t.send({ method: "GET", path: `/v1/runs/${seg(id)}/results`, query: { format: "junit" }, signal: o.signal, timeoutMs: o.timeoutMs })).text();
    }
    /** compare compares run id (head) with base by case: regressions, fixes, new, missing, score changes. */
    compare(id, base, o = {}) {
        return this.t.json({ method: "GET", path: `/v1/runs/${seg(id)}/compare`, query: { base }, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** cancel cancels the run's unfinished cases. */
    cancel(id, o = {}) {
        return this.t.json({ method: "POST", path: `/v1/runs/${seg(id)}/cancel`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
}
