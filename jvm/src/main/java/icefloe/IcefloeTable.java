package icefloe;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The Python data source's table, whose scans may stream natively (see {@link IcefloeScan}). */
public class IcefloeTable extends PythonTable {
  private final PythonDataSourceV2 source;
  private final String name;
  private final StructType schema;

  public IcefloeTable(PythonDataSourceV2 source, String name, StructType schema) {
    super(source, name, schema);
    this.source = source;
    this.name = name;
    this.schema = schema;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new PythonScanBuilder(source, name, schema, options) {
      @Override
      public Scan build() {
        return new IcefloeScan(source, name, schema, options, pushedFilters());
      }
    };
  }
}
