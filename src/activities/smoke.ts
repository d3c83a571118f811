import os from 'node:os';

export async function describeEnvironment(name: string): Promise<string> {
  return `hello ${name} from ${os.hostname()} (node ${process.version})`;
}
