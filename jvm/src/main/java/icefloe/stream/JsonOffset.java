package icefloe.stream;

import org.apache.spark.sql.connector.read.streaming.Offset;

/** An offset kept as the JSON text the Python planner produced (and Spark checkpoints). */
public final class JsonOffset extends Offset {
  private final String json;

  public JsonOffset(String json) {
    this.json = json;
  }

  @Override
  public String json() {
    return json;
  }
}
