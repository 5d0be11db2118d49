import { conflictKeys, diffLineCount, marksConflict, parseUnifiedDiff, sideBySide } from '../diff';
import { items, longDiff } from './fixtures';

describe('parseUnifiedDiff', () => {
  it('numbers the lines of both sides from the hunk header', () => {
    const lines = parseUnifiedDiff(items[1].diff ?? '');
    expect(lines[0]).toEqual({ kind: 'file', text: '--- live' });
    expect(lines[2]).toEqual({ kind: 'hunk', text: '@@ -3,6 +3,6 @@' });
    expect(lines[3]).toEqual({ kind: 'context', text: 'metadata:', oldNumber: 3, newNumber: 3 });
    expect(lines.find((l) => l.kind === 'remove')).toEqual({ kind: 'remove', text: '  minHealthy: 30%', oldNumber: 6 });
    expect(lines.find((l) => l.kind === 'add')).toEqual({ kind: 'add', text: '  minHealthy: 51%', newNumber: 6 });
  });

  it('reads a creation (--- /dev/null) as added lines only', () => {
    const lines = parseUnifiedDiff(items[0].diff ?? '');
    expect(lines.filter((l) => l.kind === 'add')).toHaveLength(8);
    expect(lines.filter((l) => l.kind === 'remove' || l.kind === 'context')).toHaveLength(0);
  });

  it('leaves out "\\ No newline at end of file"', () => {
    const lines = parseUnifiedDiff('@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n');
    expect(lines.map((l) => l.kind)).toEqual(['hunk', 'remove', 'add']);
  });
});

describe('sideBySide', () => {
  it('puts a removed line and the added line replacing it on one row', () => {
    const rows = sideBySide(parseUnifiedDiff(items[1].diff ?? ''));
    const changed = rows.find((r) => r.kind === 'pair' && r.left?.kind === 'remove');
    expect(changed).toMatchObject({ left: { text: '  minHealthy: 30%' }, right: { text: '  minHealthy: 51%' } });
  });

  it('keeps the extra lines of the longer side on rows of their own', () => {
    const rows = sideBySide(parseUnifiedDiff('@@ -1,2 +1,1 @@\n-a\n-b\n+c\n'));
    expect(rows.slice(1)).toEqual([
      { kind: 'pair', left: expect.objectContaining({ text: 'a' }), right: expect.objectContaining({ text: 'c' }) },
      { kind: 'pair', left: expect.objectContaining({ text: 'b' }), right: undefined },
    ]);
  });
});

describe('conflicts', () => {
  it('marks the changed lines that set a conflicting field, not the context', () => {
    const keys = conflictKeys(['spec.minHealthy', 'spec.profiles[0]']);
    expect(keys).toEqual(['minHealthy', 'profiles']);
    const lines = parseUnifiedDiff(items[1].diff ?? '');
    expect(lines.filter((l) => marksConflict(l, keys)).map((l) => l.kind)).toEqual(['remove', 'add']);
  });
});

describe('diffLineCount', () => {
  it('counts lines without parsing', () => {
    expect(diffLineCount('')).toBe(0);
    expect(diffLineCount('a\nb\n')).toBe(2);
    expect(diffLineCount(longDiff)).toBe(206);
  });
});
