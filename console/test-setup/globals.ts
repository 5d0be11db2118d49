import { TextDecoder, TextEncoder } from 'util';

// jsdom lacks the encoders react-router uses.
Object.assign(globalThis, { TextEncoder, TextDecoder });
