// The module federation runtime of webpack (the host's ModuleFederationPlugin).
declare function __webpack_init_sharing__(scope: string): Promise<void>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const __webpack_share_scopes__: { default: any };
