// The one place the benchmark touches PocketBERT's web code: the package's pipeline() (web/src, or the sources
// build.mjs --web-src names), as a web developer calls it.
export { pipeline as pocketbertPipeline } from 'pocketbert-web-src/index.js';
