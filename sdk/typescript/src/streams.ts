// Readers of the API's streaming answers: NDJSON lines (exec with
// "stream": true, JSONL results) and Server-Sent Events (events, run
// progress, transcripts). Both read a fetch body (a web ReadableStream)
// and cancel it when the consumer stops early.

import { makeError } from "./errors.js";

/** SSEMessage is one Server-Sent Event. */
export interface SSEMessage {
  id?: string;
  event: string;
  data: string;
}

/** lines yields body's lines as text, without their line ends. */
export async function* lines(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string> {
  if (!body) return;
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        // An aborted signal ends the body with an AbortError; anything else
        // is the connection breaking.
        if ((e as { name?: string })?.name === "AbortError") throw makeError("canceled", "stream canceled", 0, {}, undefined, e);
        throw makeError("unavailable", `stream broke: ${(e as Error)?.message ?? e}`, 0, {}, undefined, e);
      }
      const { value, done } = chunk;
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        yield line;
      }
    }
    buf += dec.decode();
    if (buf) yield buf;
  } finally {
    // The consumer stopped early (break, throw) or the body ended: either
    // way the connection is let go.
    reader.cancel().catch(() => {});
  }
}

/** sse yields body's events, as the EventSource standard parses them. */
export async function* sse(body: ReadableStream<Uint8Array> | null): AsyncGenerator<SSEMessage> {
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  for await (const line of lines(body)) {
    if (line === "") {
      if (data.length > 0) yield { id, event: event || "message", data: data.join("\n") };
      event = "";
      data = [];
      continue;
    }
    if (line.startsWith(":")) continue; // a comment: keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "id": id = value; break;
      case "event": event = value; break;
      case "data": data.push(value); break;
    }
  }
}
