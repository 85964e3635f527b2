package icefloe.stream;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Where the JVM finds the Python planner: {@code icefloe.spark.session()} registers a factory
 * when it sets the session up. Without one every streaming read stays on the Python source.
 */
public final class StreamPlanners {
  private static volatile StreamPlanningFactory factory;

  private StreamPlanners() {}

  public static void register(StreamPlanningFactory planningFactory) {
    factory = planningFactory;
  }

  public static boolean registered() {
    return factory != null;
  }

  /** The planning of a read with these options, or null when it should stream through Python. */
  public static StreamPlanning create(CaseInsensitiveStringMap options) {
    StreamPlanningFactory current = factory;
    if (current == null) {
      return null;
    }
    Map<String, String> lower = new TreeMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      lower.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    try {
      return current.create(new ObjectMapper().writeValueAsString(lower));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
