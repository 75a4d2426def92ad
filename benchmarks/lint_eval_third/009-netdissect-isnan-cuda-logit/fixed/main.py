import settings
from loader.model_loader import loadmodel
from feature_operation import hook_feature,FeatureOperator

fo = FeatureOperator()
model = loadmodel(hook_feature)

############ STEP 1: feature extraction ###############
maxfeature = fo.feature_extraction(model=model)
