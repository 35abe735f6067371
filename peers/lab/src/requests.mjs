// The lab's workload, shared by every peer client: a request every
// `everyMs`, ready or not, each reported as `sent` and then `settled`.

/**
 * Start issuing requests; `request(id)` resolves to an outcome (ok | timeout
 * | not_ready | closed | error). Returns a function that stops the ticker.
 */
export function requestLoop(everyMs, request, emit) {
  if (!(everyMs > 0)) return () => {};
  let k = 0;
  const timer = setInterval(() => {
    const id = ++k;
    emit({ ev: "sent", id });
    request(id).then((outcome) => emit({ ev: "settled", id, outcome }));
  }, everyMs);
  return () => clearInterval(timer);
}
