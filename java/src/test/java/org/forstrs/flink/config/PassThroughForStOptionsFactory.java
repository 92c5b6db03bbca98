package org.forstrs.flink.config;

import org.apache.flink.state.forst.ForStOptionsFactory;

import org.forstdb.ColumnFamilyOptions;
import org.forstdb.DBOptions;

import java.util.Collection;

/**
 * A valid value of Flink's {@code state.backend.forst.options-factory} (Flink's ForSt loads and
 * instantiates the class when it is configured); it changes nothing.
 */
public class PassThroughForStOptionsFactory implements ForStOptionsFactory {

    private static final long serialVersionUID = 1L;

    @Override
    public DBOptions createDBOptions(
            DBOptions currentOptions, Collection<AutoCloseable> handlesToClose) {
        return currentOptions;
    }

    @Override
    public ColumnFamilyOptions createColumnOptions(
            ColumnFamilyOptions currentOptions, Collection<AutoCloseable> handlesToClose) {
        return currentOptions;
    }
}
