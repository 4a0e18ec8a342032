"""catalog/sources"""
