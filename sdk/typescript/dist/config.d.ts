/** DEFAULT_URL is the server without any setting, as primectl's. */
export declare const DEFAULT_URL = "http://127.0.0.1:8080";
/** Settings are what resolve found. */
export interface Settings {
    url: string;
    token?: string;
    /** tokenSource says where the key came from: option, env, config, admin.key, or none. */
    tokenSource: "option" | "env" | "config" | "admin.key" | "none";
}
/** parseConfig reads the config file's url and token (a flat YAML map). */
export declare function parseConfig(text: string): {
    url?: string;
    token?: string;
};
/** isLoopback says whether url names a server on this machine. */
export declare function isLoopback(url: string): boolean;
/** resolve finds the server and key the way primectl does; given values win. */
export declare function resolve(given?: {
    url?: string;
    token?: string;
}): Promise<Settings>;
