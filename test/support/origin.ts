// The test origin is the same one the demo uses.
export * from '../../src/demo/origin';
