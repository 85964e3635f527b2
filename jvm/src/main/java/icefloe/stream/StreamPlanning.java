package icefloe.stream;

/**
 * The planning of one streaming read, implemented in Python ({@code icefloe.spark.jvm_stream}) and
 * called through py4j's callback server on the driver. Offsets are the JSON the Python streaming
 * source stores ({@code {"snapshot_id": S, "position": p, "scan_all": b}}), so checkpoints of
 * either source are readable by the other.
 */
public interface StreamPlanning {
  /** Where a new query starts (offset JSON). */
  String initialOffset();

  /** {@code {"max_files": n or null, "max_records": n or null}}: the options' admission limits. */
  String readLimits();

  /** The end of the next micro-batch from {@code start}; {@code limited}: apply the limits. */
  String latestOffset(String start, boolean limited);

  /** Trigger.AvailableNow: never read past the head of the table at this moment. */
  void prepareForTriggerAvailableNow();

  /**
   * The files after {@code start} up to {@code end}, packed into input partitions: {@code
   * {"partitions": [[{"path": p, "length": n, "deleted": [positions]}, ...], ...]}}.
   */
  String files(String start, String end);

  /** The Spark schema (JSON) the files are read with: the stream's columns with field ids. */
  String fileSchema();
}
