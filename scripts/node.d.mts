// Types of scripts/node.mjs, for the tests that import it.
export declare const SUPPORTED_MAJORS: number[];
export declare const BROUGHT_VERSION: string;
export declare function isSupported(version?: string): boolean;
export declare function broughtNode(dir?: string): string;
export declare function supportedNode(): string;
export declare function runOnSupportedNode(program: string, args: string[]): Promise<number>;
