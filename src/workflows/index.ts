// The workflow bundle's entry point: every workflow type the worker registers.
export { smokeWorkflow } from './smoke';
export { crawlMonitorWorkflow } from './monitor';
export { crawlBatchWorkflow } from './batch';
