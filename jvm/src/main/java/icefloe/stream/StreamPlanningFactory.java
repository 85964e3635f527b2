package icefloe.stream;

/** Implemented in Python: the planning of a streaming read, or null to stream through Python. */
public interface StreamPlanningFactory {
  /** {@code options}: the read's options as a JSON object (keys in lower case). */
  StreamPlanning create(String options);
}
