import { installTemporalRuntime } from '../../src/temporal/runtime';

installTemporalRuntime('WARN');
