import { MOVE_AFTER, MovedOrigins } from './movedOrigins';

describe('learning that an origin moved', () => {
  const redirects = (m: MovedOrigins, n: number, from: string, to: string, status = 301) => {
    for (let i = 0; i < n; i++) m.noteAnswer(`${from}/img/${i}.jpg?s=1`, status, `${to}/img/${i}.jpg?s=1`);
  };

  it('asks on the new origin after three permanent redirects in a row to the same path and query there', () => {
    const m = new MovedOrigins();
    redirects(m, MOVE_AFTER - 1, 'http://old.example', 'https://old.example');
    expect(m.resolve('http://old.example/a.jpg')).toBe('http://old.example/a.jpg');
    m.noteAnswer('http://old.example/x.png', 308, 'https://old.example/x.png');
    expect(m.resolve('http://old.example/a%20b.jpg?w=1&h=2')).toBe('https://old.example/a%20b.jpg?w=1&h=2');
    expect(m.resolve('http://old.example/a.jpg')).not.toBe('http://old.example/a.jpg');
    // Other origins (another port is one), and URLs already on the new origin, as they are.
    expect(m.resolve('http://other.example/a.jpg')).toBe('http://other.example/a.jpg');
    expect(m.resolve('http://old.example:8080/a.jpg')).toBe('http://old.example:8080/a.jpg');
    expect(m.resolve('https://old.example/a.jpg')).toBe('https://old.example/a.jpg');
  });

  it('learns a move to another host (www, a new domain) and keeps the ports the redirects named', () => {
    const m = new MovedOrigins();
    redirects(m, 3, 'https://example.com', 'https://www.example.com');
    redirects(m, 3, 'http://127.0.0.1:8080', 'https://127.0.0.2:8443');
    redirects(m, 3, 'http://a.example', 'http://b.example');
    expect(m.resolve('https://example.com/p/q.jpg')).toBe('https://www.example.com/p/q.jpg');
    expect(m.resolve('http://127.0.0.1:8080/p/q.jpg')).toBe('https://127.0.0.2:8443/p/q.jpg');
    expect(m.resolve('http://a.example/p')).toBe('http://b.example/p');
  });

  it('learns nothing from temporary redirects, other paths or queries, or a move from https to http', () => {
    const m = new MovedOrigins();
    for (let i = 0; i < 5; i++) {
      m.noteAnswer(`http://a.example/${i}.jpg`, 302, `https://a.example/${i}.jpg`);
      m.noteAnswer(`http://b.example/${i}.jpg`, 301, `https://b.example/images/${i}.jpg`);
      m.noteAnswer(`http://d.example/${i}.jpg`, 301, `http://d.example/${i}.jpg?v=2`);
      m.noteAnswer(`http://e.example/${i}.jpg?x=1`, 301, `https://e.example/${i}.jpg`);
      m.noteAnswer(`https://f.example/${i}.jpg`, 301, `http://f.example/${i}.jpg`);
    }
    for (const o of ['http://a.example', 'http://b.example', 'http://d.example', 'http://e.example', 'https://f.example']) expect(m.resolve(`${o}/z.jpg`)).toBe(`${o}/z.jpg`);
  });

  it('starts counting again after any other answer from the old origin, or a redirect to another origin', () => {
    const m = new MovedOrigins();
    redirects(m, 2, 'http://old.example', 'https://old.example');
    m.noteAnswer('http://old.example/still-here.jpg', 200);
    redirects(m, 2, 'http://old.example', 'https://old.example');
    m.noteAnswer('http://old.example/img/9.jpg', 301, 'https://cdn.example/img/9.jpg');
    redirects(m, 2, 'http://old.example', 'https://old.example');
    expect(m.resolve('http://old.example/a.jpg')).toBe('http://old.example/a.jpg');
    redirects(m, 1, 'http://old.example', 'https://old.example');
    expect(m.resolve('http://old.example/a.jpg')).not.toBe('http://old.example/a.jpg');
  });
});
