// Type declarations of pocketbert/esbuild (src/esbuild.js).

/** The folder name the plugin copies LiteRT.js's WebAssembly files to, inside esbuild's output folder. */
export const WASM_FOLDER_NAME: string;

/** A structural esbuild plugin (the package does not depend on esbuild's types). */
export interface PocketbertEsbuildPlugin {
  name: string;
  setup(build: any): void;
}

/** esbuild plugin: copies LiteRT.js's WebAssembly builds beside the bundle and points pocketbert at them. */
export function pocketbertWasm(options?: { folder?: string }): PocketbertEsbuildPlugin;
