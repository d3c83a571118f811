import { errorText } from './errorText';

describe('errorText', () => {
  it("adds the causes' messages that the error's own does not hold", () => {
    const grpc = Object.assign(new Error('3 INVALID_ARGUMENT: Namespace default has no mapping defined for search attribute CrawlState'), { code: 3 });
    expect(errorText(new Error('Failed to signalWithStart Workflow', { cause: grpc })))
      .toBe('Failed to signalWithStart Workflow: 3 INVALID_ARGUMENT: Namespace default has no mapping defined for search attribute CrawlState');
    expect(errorText(new Error('cannot read x: ENOENT', { cause: new Error('ENOENT') }))).toBe('cannot read x: ENOENT');
    expect(errorText('plain')).toBe('plain');
  });
});
