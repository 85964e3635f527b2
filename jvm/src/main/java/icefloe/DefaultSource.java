package icefloe;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.types.StructType;

/**
 * The {@code icefloe} format when icefloe's jar is on the classpath.
 *
 * <p>Spark resolves {@code format("icefloe")} by trying a class named {@code icefloe} and then
 * {@code icefloe.DefaultSource} before it falls back to a Python data source registered under that
 * name; a {@code DataSourceRegister} short name would instead clash with the Python source
 * (FOUND_MULTIPLE_DATA_SOURCES). So this class takes the name, and stays the Python data source for
 * everything (it extends Spark's own {@code PythonDataSourceV2}, which calls the registered Python
 * class): batch reads and writes, streaming writes, SQL. Only streaming reads may go elsewhere:
 * see {@link IcefloeScan#toMicroBatchStream}.
 *
 * <p>Spark makes one instance per read or write and looks the Python class up once per instance
 * ({@link #source}); before that, {@link CatalogFollowers} has it registered again when the
 * session's catalog settings changed.
 */
public class DefaultSource extends PythonDataSourceV2 {
  private String name = "icefloe";
  private boolean followed;

  @Override
  public void setShortName(String shortName) {
    super.setShortName(shortName);
    this.name = shortName;
  }

  @Override
  public synchronized UserDefinedPythonDataSource source() {
    if (!followed) {
      followed = true;
      CatalogFollowers.follow();
    }
    return super.source();
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new IcefloeTable(this, name, schema);
  }
}
