/** SSEMessage is one Server-Sent Event. */
export interface SSEMessage {
    id?: string;
    event: string;
    data: string;
}
/** lines yields body's lines as text, without their line ends. */
export declare function lines(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string>;
/** sse yields body's events, as the EventSource standard parses them. */
export declare function sse(body: ReadableStream<Uint8Array> | null): AsyncGenerator<SSEMessage>;
